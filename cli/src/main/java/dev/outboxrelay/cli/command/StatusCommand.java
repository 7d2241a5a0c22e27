package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.Database;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.TextTable;
import dev.outboxrelay.cli.operator.OldestRow;
import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "status",
    description = {
      "Rows per status, the lag, and the oldest FAILED and EXHAUSTED rows of one instance key.",
      "Lag is the age of the oldest row awaiting delivery (PENDING, AMBIGUOUS or IN_FLIGHT), by"
          + " the database clock.",
      "Expired leases: the IN_FLIGHT rows whose lease has expired by the database clock (their"
          + " claimer stopped renewing it; the relay claims them again), counted among IN_FLIGHT.",
      "All figures are read in one snapshot and judged at its start, however long the counts"
          + " take."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  export OUTBOX_JDBC_URL=jdbc:postgresql://db:5432/app OUTBOX_USER=ops",
      "  export OUTBOX_PASSWORD=...   # or --password-file /run/secrets/outbox",
      "  outbox-relay-cli status --instance-key orders",
      "  outbox-relay-cli status --instance-key orders --json"
    })
public final class StatusCommand extends InstanceCommand {
  @Option(names = "--json", description = "Print JSON for machines.")
  boolean json;

  @Option(
      names = "--count-published",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "Count the PUBLISHED rows: every entry the published log keeps for retention is read"
              + " (minutes at hundreds of millions). --no-count-published leaves them out."
              + " Default: counted.")
  boolean countPublished;

  /**
   * Every figure of the status, read in one snapshot of the table and judged at the transaction's
   * start (expired leases, lag, ages): see {@link Database#inOneSnapshot}.
   */
  private record Figures(
      BacklogSnapshot backlog,
      Optional<OldestRow> failed,
      Optional<OldestRow> exhausted,
      long expiredLeases) {}

  @Override
  int run(Database database) {
    Figures figures =
        database.inOneSnapshot(
            s ->
                new Figures(
                    s.relayStore().inspect(Set.of(instanceKey), countPublished),
                    s.operatorStore().oldest(instanceKey, MessageStatus.FAILED),
                    s.operatorStore().oldest(instanceKey, MessageStatus.EXHAUSTED),
                    s.operatorStore().countExpiredLeases(instanceKey)));
    BacklogSnapshot snapshot = figures.backlog();
    Optional<OldestRow> failed = figures.failed();
    Optional<OldestRow> exhausted = figures.exhausted();
    long expiredLeases = figures.expiredLeases();
    long total = 0;
    for (MessageStatus status : MessageStatus.values()) {
      total += snapshot.count(status); // 0 for PUBLISHED when not counted
    }
    if (total == 0 && countPublished) {
      // A key with no row yet, or a mistyped one: either way, nothing here says "healthy".
      // (Without the published rows counted, none awaiting delivery or parked is the norm.)
      err()
          .println(
              "note: instance key "
                  + Text.safe(instanceKey)
                  + " has no row in "
                  + database.table()
                  + ": check the key if rows were expected");
      err().flush();
    }
    PrintWriter out = out();
    if (json) {
      ObjectNode root = Text.json().createObjectNode();
      root.put("table", database.table().toString());
      root.put("instance_key", instanceKey);
      ObjectNode counts = root.putObject("counts");
      for (MessageStatus status : MessageStatus.values()) {
        if (counted(status)) {
          counts.put(status.name(), snapshot.count(status));
        } else {
          counts.putNull(status.name());
        }
      }
      root.put("total", total);
      root.put("expired_leases", expiredLeases);
      root.put("lag_ms", snapshot.lag().toMillis());
      root.set("oldest_failed", oldestJson(failed));
      root.set("oldest_exhausted", oldestJson(exhausted));
      out.println(Text.toJson(root));
      return ExitCode.OK;
    }
    out.println("table " + database.table() + ", instance key " + Text.safe(instanceKey));
    out.println();
    TextTable counts = new TextTable("STATUS", "ROWS");
    for (MessageStatus status : MessageStatus.values()) {
      counts.row(status.name(), counted(status) ? snapshot.count(status) : "not counted");
    }
    counts.row("total", total);
    out.print(counts.render());
    out.println();
    out.println("expired leases: " + expiredLeases + " (IN_FLIGHT rows whose lease has expired)");
    out.println(
        "lag: "
            + Text.duration(snapshot.lag())
            + " (age of the oldest PENDING, AMBIGUOUS or IN_FLIGHT row)");
    out.println();
    TextTable oldest = new TextTable("OLDEST", "MESSAGE ID", "REASON", "AGE");
    oldestRow(oldest, MessageStatus.FAILED, failed);
    oldestRow(oldest, MessageStatus.EXHAUSTED, exhausted);
    out.print(oldest.render());
    return ExitCode.OK;
  }

  private boolean counted(MessageStatus status) {
    return countPublished || status != MessageStatus.PUBLISHED;
  }

  private static ObjectNode oldestJson(Optional<OldestRow> row) {
    if (row.isEmpty()) {
      return null;
    }
    ObjectNode node = Text.json().createObjectNode();
    node.put("message_id", row.get().messageId());
    node.put("reason_code", row.get().reasonCode());
    Duration age = row.get().age();
    if (age == null) {
      node.putNull("age_ms");
    } else {
      node.put("age_ms", age.toMillis());
    }
    return node;
  }

  private static void oldestRow(TextTable table, MessageStatus status, Optional<OldestRow> row) {
    if (row.isEmpty()) {
      table.row(status.name(), "-", "-", "-");
    } else {
      table.row(
          status.name(),
          Text.safe(row.get().messageId()),
          Text.safe(row.get().reasonCode()),
          row.get().age() == null ? "unknown" : Text.duration(row.get().age()));
    }
  }
}
