package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Which parked rows of one instance key to requeue or discard.
 *
 * @param messageIds the requested ids, without duplicates, in the order given (MESSAGE_IDS only)
 * @param correlationId CORRELATION_ID only
 * @param statuses FAILED, EXHAUSTED or both
 * @param deadLetteredOnly only FAILED rows whose dead-letter record Kafka confirmed (CORRELATION_ID
 *     and ALL only: by message id an operator names each row)
 */
public record ParkedSelection(
    String instanceKey,
    Selector selector,
    List<String> messageIds,
    String correlationId,
    Set<MessageStatus> statuses,
    boolean deadLetteredOnly) {

  /** How rows are chosen; always among the parked rows of the instance key. */
  public enum Selector {
    MESSAGE_IDS,
    CORRELATION_ID,
    ALL
  }

  public static final Set<MessageStatus> PARKED =
      Set.copyOf(EnumSet.of(MessageStatus.FAILED, MessageStatus.EXHAUSTED));

  public ParkedSelection {
    Objects.requireNonNull(instanceKey, "instanceKey");
    Objects.requireNonNull(selector, "selector");
    messageIds = messageIds == null ? List.of() : List.copyOf(new LinkedHashSet<>(messageIds));
    statuses = statuses == null || statuses.isEmpty() ? PARKED : Set.copyOf(statuses);
    if (!PARKED.containsAll(statuses)) {
      throw new IllegalArgumentException(
          "only FAILED and EXHAUSTED rows can be requeued or discarded");
    }
    if (selector == Selector.MESSAGE_IDS && messageIds.isEmpty()) {
      throw new IllegalArgumentException("at least one message id is required");
    }
    if (selector == Selector.CORRELATION_ID && correlationId == null) {
      throw new IllegalArgumentException("a correlation id is required");
    }
    if (deadLetteredOnly && selector == Selector.MESSAGE_IDS) {
      throw new IllegalArgumentException("dead-lettered rows are chosen by correlation id or all");
    }
    if (deadLetteredOnly && !statuses.contains(MessageStatus.FAILED)) {
      throw new IllegalArgumentException("only FAILED rows are dead-lettered");
    }
  }

  /** Any parked row the selector and statuses choose, with or without a dead-letter copy. */
  public ParkedSelection(
      String instanceKey,
      Selector selector,
      List<String> messageIds,
      String correlationId,
      Set<MessageStatus> statuses) {
    this(instanceKey, selector, messageIds, correlationId, statuses, false);
  }

  String[] statusNames() {
    return statuses.stream().map(Enum::name).sorted().toArray(String[]::new);
  }
}
