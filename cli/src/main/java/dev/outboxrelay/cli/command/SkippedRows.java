package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.ExitCode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.TextTable;
import dev.outboxrelay.cli.operator.ParkedChange;
import java.io.PrintWriter;
import java.util.List;

/** The requested ids a change by message id left alone, and why: as text and as JSON. */
final class SkippedRows {
  private SkippedRows() {}

  /** Under {@code heading} ("not requeued:"), one line each; nothing when none was left. */
  static void print(PrintWriter out, String heading, List<ParkedChange.Skipped> skipped) {
    if (skipped.isEmpty()) {
      return;
    }
    out.println();
    out.println(heading);
    TextTable table = new TextTable("MESSAGE ID", "REASON", "STATUS");
    for (ParkedChange.Skipped s : skipped) {
      table.row(Text.safe(s.messageId()), s.reason(), s.status() == null ? "-" : s.status().name());
    }
    out.print(table.render());
  }

  /**
   * {@link ExitCode#PARTIAL} when some requested id was left alone (said on {@code err} too, for
   * scripts that log only it), else {@link ExitCode#OK}: called once something was changed.
   */
  static int exitCode(PrintWriter err, String notDone, List<ParkedChange.Skipped> skipped) {
    return exitCode(err, skipped.size(), notDone, "listed with their reasons");
  }

  /**
   * {@link ExitCode#PARTIAL} when {@code left} requested ids were (or would be) left alone, said on
   * {@code err} with {@code where} the reasons are, else {@link ExitCode#OK}.
   */
  static int exitCode(PrintWriter err, long left, String notDone, String where) {
    if (left <= 0) {
      return ExitCode.OK;
    }
    err.println(
        "error: partly done: " + left + " requested message id(s) " + notDone + " (" + where + ")");
    return ExitCode.PARTIAL;
  }

  /** As the array {@code field} of {@code node}. */
  static void put(ObjectNode node, String field, List<ParkedChange.Skipped> skipped) {
    ArrayNode array = node.putArray(field);
    for (ParkedChange.Skipped s : skipped) {
      ObjectNode item = array.addObject();
      item.put("message_id", s.messageId());
      item.put("reason", s.reason().name());
      item.put("status", s.status() == null ? null : s.status().name());
    }
  }
}
