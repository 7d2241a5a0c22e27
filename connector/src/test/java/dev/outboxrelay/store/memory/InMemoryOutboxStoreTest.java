package dev.outboxrelay.store.memory;

import dev.outboxrelay.store.Lease;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreContract;
import dev.outboxrelay.store.memory.InMemoryOutboxStore.RowState;
import dev.outboxrelay.writer.EnqueueResult;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Instant;

class InMemoryOutboxStoreTest extends OutboxStoreContract {
  private InMemoryOutboxStore memory;

  @Override
  protected OutboxStore newStore(ManualClock clock) {
    memory = new InMemoryOutboxStore(clock);
    return memory;
  }

  @Override
  protected EnqueueResult enqueue(String instanceKey, OutboxMessage message) {
    try {
      return memory.enqueue(instanceKey, message);
    } catch (InMemoryOutboxStore.IdTakenException e) {
      throw new MessageIdTaken(e);
    }
  }

  @Override
  protected void insertLegacy(OutboxMessage message) {
    memory.insertLegacy(message);
  }

  @Override
  protected RowState state(String messageId) {
    return memory.find(messageId).orElse(null);
  }

  @Override
  protected void holdElsewhere(String messageId, Lease lease, Instant expiresAt) {
    memory.holdElsewhere(messageId, lease, expiresAt);
  }

  @Override
  protected void parkElsewhere(
      String messageId, long token, long epoch, long batch, String reasonCode) {
    memory.parkElsewhere(messageId, token, epoch, batch, reasonCode);
  }

  @Override
  protected void backdate(String messageId, Instant createdAt) {
    memory.backdate(messageId, createdAt);
  }

  @Override
  protected void createWriter(String instanceKey) {
    memory.enqueue(instanceKey, message("never-written", "a"));
  }
}
