package dev.outboxrelay.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** list and inspect: one key's rows only; payload and headers only with --payload. */
class ListAndInspectTest {
  private static final byte[] BINARY = {(byte) 0xff, (byte) 0xfe, 0, 1};

  /** Shown as "eu-1exe.pdf" by a right-to-left override; U+009B starts a terminal sequence. */
  private static final String BIDI_ID = "eu-1\u202Efdp.exe\u009B2J";

  private static OutboxFixture outbox;

  @BeforeAll
  static void outbox() throws SQLException {
    outbox = OutboxFixture.populated("list");
    outbox.insert("eu", "eu-binary", null, BINARY);
    outbox.insert("eu", "eu-\u001b[2Jtricky", null);
    outbox.insert("eu", BIDI_ID, "c-\u200Bzero-width");
    // Ids that print alike unless backslashes are doubled and trailing spaces shown.
    outbox.insert("esc", "esc-\u001b", null);
    outbox.insert("esc", "esc-\\u001b", null);
    outbox.insert("esc", "esc-space ", null);
    outbox.insert("esc", "esc-space", null);
    // Held under exactly-once: the claim's epoch and batch (schema version 8).
    outbox.update("eu-in-flight", "lease_epoch = 3, claim_batch = 17");
  }

  @AfterAll
  static void close() {
    outbox.close();
  }

  @Test
  void listShowsOnlyTheKeysRowsWithThatStatusOldestFirst() {
    Cli.Result r = outbox.cli().forKey("eu", "list", "--status", "failed");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(
        r.hasLine("SEQ +MESSAGE ID +ATTEMPTS +REASON +AGGREGATE +EVENT TYPE .*"), r::toString);
    assertTrue(
        r.hasLine("\\d+ +eu-failed-1 +2 +POISON_PILL +order/agg-eu-failed-1 +OrderPlaced +c-1 .*"),
        r::toString);
    assertTrue(r.hasLine("\\d+ +eu-failed-2 +0 +DEAD_LETTERED .*"), r::toString);
    assertTrue(r.out().indexOf("eu-failed-1") < r.out().indexOf("eu-failed-2"));
    assertFalse(r.out().contains("us-"), r::toString);
    assertFalse(r.out().contains("legacy"), r::toString); // legacy-failed is parked too
    assertFalse(r.out().contains("PAYLOAD-SENTINEL"), r::toString);

    Cli.Result pending = outbox.cli().forKey("eu", "list", "--status", "PENDING");
    assertEquals(ExitCode.OK, pending.exitCode(), pending::toString);
    assertTrue(pending.hasLine("\\d+ +eu-pending .*"), pending::toString);
    assertFalse(pending.out().contains("legacy"), pending::toString); // legacy-pending
  }

  @Test
  void listPagesWithAfterSeq() {
    Cli.Result first = outbox.cli().forKey("eu", "list", "--status", "FAILED", "--limit", "1");
    assertTrue(first.out().contains("eu-failed-1"), first::toString);
    assertFalse(first.out().contains("eu-failed-2"), first::toString);
    String hint =
        first
            .out()
            .lines()
            .filter(l -> l.startsWith("more rows may follow"))
            .findFirst()
            .orElseThrow();
    String afterSeq = hint.substring(hint.lastIndexOf(' ') + 1);

    Cli.Result next =
        outbox.cli().forKey("eu", "list", "--status", "FAILED", "--after-seq", afterSeq);
    assertTrue(next.out().contains("eu-failed-2"), next::toString);
    assertFalse(next.out().contains("eu-failed-1"), next::toString);
  }

  /**
   * --json pages as the table does: a full page's next --after-seq on stderr, so that stdout stays
   * one JSON array; none after a page with room left.
   */
  @Test
  void listJsonGivesTheNextPageOnStderr() {
    Cli.Result first =
        outbox.cli().forKey("eu", "list", "--status", "FAILED", "--limit", "1", "--json");

    assertEquals(ExitCode.OK, first.exitCode(), first::toString);
    JsonNode page = first.json();
    assertEquals(1, page.size(), first::toString);
    assertEquals("eu-failed-1", page.get(0).get("message_id").asText());
    String afterSeq = page.get(0).get("seq").asText();
    assertEquals("more rows may follow: add --after-seq " + afterSeq + "\n", first.err());

    Cli.Result next =
        outbox
            .cli()
            .forKey(
                "eu",
                "list",
                "--status",
                "FAILED",
                "--limit",
                "2",
                "--after-seq",
                afterSeq,
                "--json");
    assertEquals(ExitCode.OK, next.exitCode(), next::toString);
    assertEquals(1, next.json().size(), next::toString);
    assertEquals("eu-failed-2", next.json().get(0).get("message_id").asText());
    assertEquals("", next.err(), "the last page has room left: no hint");
  }

  @Test
  void listJsonHasRelayStateButNoPayloadOrHeaders() {
    Cli.Result r = outbox.cli().forKey("us", "list", "--status", "EXHAUSTED", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode rows = r.json();
    assertEquals(1, rows.size());
    JsonNode row = rows.get(0);
    assertEquals("us-exhausted-1", row.get("message_id").asText());
    assertEquals("us", row.get("instance_key").asText());
    assertEquals(5, row.get("attempts").asInt());
    assertTrue(row.get("isolated").asBoolean());
    assertEquals(OutboxFixture.PAYLOAD.length(), row.get("payload_bytes").asInt());
    List<String> fields = new ArrayList<>();
    row.fieldNames().forEachRemaining(fields::add);
    assertFalse(fields.contains("headers"), fields::toString);
    assertFalse(
        fields.stream().anyMatch(f -> f.startsWith("payload_") && !f.equals("payload_bytes")));
    assertFalse(r.out().contains("SENTINEL"), r::toString);
  }

  /** A payload column of a domain over bytea is measured in bytes, as the relay measures it. */
  @Test
  void aPayloadOfADomainOverByteaIsMeasuredInBytes() throws SQLException {
    try (OutboxFixture domain = OutboxFixture.populated("listdomain")) {
      domain.exec("CREATE DOMAIN outbox_payload AS bytea");
      domain.exec("ALTER TABLE outbox ALTER COLUMN payload TYPE outbox_payload");

      Cli.Result r = domain.cli().forKey("us", "list", "--status", "EXHAUSTED", "--json");

      assertEquals(ExitCode.OK, r.exitCode(), r::toString);
      assertEquals(OutboxFixture.PAYLOAD.length(), r.json().get(0).get("payload_bytes").asInt());
    }
  }

  /** Every relay field, named as its column: the exactly-once claim's too. */
  @Test
  void listJsonHasTheExactlyOnceClaimFields() {
    Cli.Result r = outbox.cli().forKey("eu", "list", "--status", "IN_FLIGHT", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode row = r.json().get(0);
    assertEquals("eu-in-flight", row.get("message_id").asText());
    assertEquals(3, row.get("lease_epoch").asLong(), r::toString);
    assertEquals(17, row.get("claim_batch").asLong(), r::toString);

    JsonNode parked = outbox.cli().forKey("eu", "list", "--status", "FAILED", "--json").json();
    assertTrue(parked.get(0).has("lease_epoch"), parked::toString);
    assertTrue(parked.get(0).get("lease_epoch").isNull(), parked::toString);
    assertTrue(parked.get(0).get("claim_batch").isNull(), parked::toString);

    Cli.Result inspect = outbox.cli().forKey("eu", "inspect", "eu-in-flight");
    assertTrue(inspect.hasLine("lease epoch +3"), inspect::toString);
    assertTrue(inspect.hasLine("claim batch +17"), inspect::toString);
  }

  @Test
  void listOfAnEmptyStatusSaysSo() {
    Cli.Result r = outbox.cli().forKey("asia", "list", "--status", "PENDING");
    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertEquals("no PENDING rows for instance key asia\n", r.out());
  }

  @Test
  void inspectHidesPayloadAndHeadersUnlessAsked() {
    Cli.Result r = outbox.cli().forKey("eu", "inspect", "eu-exhausted-1");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.hasLine("status +EXHAUSTED"), r::toString);
    assertTrue(r.hasLine("last failure code +BROKER_TIMEOUT"), r::toString);
    assertTrue(r.hasLine("lease token +9"), r::toString);
    assertTrue(r.hasLine("isolated +true"), r::toString);
    assertTrue(
        r.hasLine("payload size +" + OutboxFixture.PAYLOAD.length() + " bytes"), r::toString);
    assertTrue(r.hasLine("payload and headers not shown: add --payload to show them"));
    assertFalse(r.out().contains("SENTINEL"), r::toString);

    Cli.Result json = outbox.cli().forKey("eu", "inspect", "eu-exhausted-1", "--json");
    assertFalse(json.out().contains("SENTINEL"), json::toString);
    assertFalse(json.json().has("payload_utf8"));
    assertFalse(json.json().has("headers"));
  }

  @Test
  void inspectShowsPayloadAndHeadersWhenAsked() {
    Cli.Result r = outbox.cli().forKey("eu", "inspect", "eu-failed-1", "--payload");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.out().contains("payload (UTF-8):\n" + OutboxFixture.PAYLOAD + "\n"), r::toString);
    assertTrue(r.out().contains("HEADER-SENTINEL"), r::toString);

    JsonNode json =
        outbox.cli().forKey("eu", "inspect", "eu-failed-1", "--payload", "--json").json();
    assertEquals(OutboxFixture.PAYLOAD, json.get("payload_utf8").asText());
    assertEquals("HEADER-SENTINEL", json.get("headers").get("trace").asText());
    // Numbers as the relay sends them, the row's text, not rounded to a double.
    String text = outbox.cli().forKey("eu", "inspect", "eu-failed-1", "--payload", "--json").out();
    assertTrue(text.contains("\"amount\" : 1.50,"), text);
    assertTrue(text.contains("\"precise\" : 0.1000000000000000055511151231257827"), text);
    // Written out as the row has it, never in scientific notation (a decimal's toString: 1E-7).
    assertTrue(text.contains("\"tiny\" : 0.0000001,"), text);

    JsonNode binary =
        outbox.cli().forKey("eu", "inspect", "eu-binary", "--payload", "--json").json();
    assertEquals(Base64.getEncoder().encodeToString(BINARY), binary.get("payload_base64").asText());
  }

  @Test
  void inspectNeverShowsAnotherKeysOrALegacyRow() {
    for (String id : new String[] {"us-failed-1", "legacy-failed", "no-such-id"}) {
      Cli.Result r = outbox.cli().forKey("eu", "inspect", id, "--payload");
      assertEquals(ExitCode.NOTHING_MATCHED, r.exitCode(), r::toString);
      assertEquals("", r.out());
      assertEquals("error: instance key eu has no row with message id " + id + "\n", r.err());
    }
  }

  @Test
  void listPublishedShowsThePublishedLogAndTheRowsPublishedBeforeItInSeqOrder() {
    Cli.Result r = outbox.cli().forKey("eu", "list", "--status", "PUBLISHED", "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    JsonNode rows = r.json();
    assertEquals(2, rows.size(), r::toString);
    // eu-published-old is a row of the table (published before schema version 9),
    // eu-published-new an entry of the published log.
    assertEquals("eu-published-old", rows.get(0).get("message_id").asText());
    assertEquals("eu-published-new", rows.get(1).get("message_id").asText());
    assertTrue(rows.get(0).get("seq").asLong() < rows.get(1).get("seq").asLong());
    JsonNode logged = rows.get(1);
    assertEquals("PUBLISHED", logged.get("status").asText());
    assertEquals("eu", logged.get("instance_key").asText());
    assertEquals("agg-eu-published-new", logged.get("aggregate_id").asText());
    assertEquals("OrderPlaced", logged.get("event_type").asText());
    assertEquals(42, logged.get("kafka_offset").asLong());
    assertTrue(logged.get("payload_bytes").isNull(), r::toString);
    assertFalse(r.out().contains("us-"), r::toString);
    assertFalse(r.out().contains("legacy"), r::toString);

    Cli.Result page =
        outbox
            .cli()
            .forKey(
                "eu",
                "list",
                "--status",
                "PUBLISHED",
                "--after-seq",
                rows.get(0).get("seq").asText(),
                "--limit",
                "1");
    assertTrue(page.hasLine("\\d+ +eu-published-new +1 .*"), page::toString);
    assertFalse(page.out().contains("eu-published-old"), page::toString);
  }

  @Test
  void inspectFindsAPublishedMessageInThePublishedLog() {
    Cli.Result r = outbox.cli().forKey("eu", "inspect", "eu-published-new");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.hasLine("status +PUBLISHED"), r::toString);
    assertTrue(r.hasLine("kafka +orders-0@42"), r::toString);
    assertTrue(r.hasLine("attempts +1"), r::toString);
    assertTrue(r.hasLine("lease token +4"), r::toString);
    assertTrue(r.hasLine("lease owner +-"), r::toString);
    assertTrue(r.hasLine("payload size +no payload"), r::toString);
    assertTrue(r.hasLine("published at +\\d{4}-.*"), r::toString);

    Cli.Result payload = outbox.cli().forKey("eu", "inspect", "eu-published-new", "--payload");
    assertEquals(ExitCode.OK, payload.exitCode(), payload::toString);
    assertTrue(payload.out().contains("headers: none\npayload: none\n"), payload::toString);
    assertFalse(payload.out().contains("SENTINEL"), payload::toString);

    JsonNode json =
        outbox.cli().forKey("eu", "inspect", "eu-published-new", "--payload", "--json").json();
    assertEquals("PUBLISHED", json.get("status").asText());
    assertEquals("orders", json.get("kafka_topic").asText());
    assertTrue(json.get("payload_utf8").isNull());
    assertTrue(json.get("headers").isNull());

    // Another key's published message is not this key's.
    Cli.Result other = outbox.cli().forKey("eu", "inspect", "us-published-new");
    assertEquals(ExitCode.NOTHING_MATCHED, other.exitCode(), other::toString);
  }

  @Test
  void inspectPrefersTheTablesRowWhenARetriedInsertRacedThePublish() throws SQLException {
    // The id was published (its entry is in the log), and a retried insert that raced the publish
    // wrote it again: the row that is still to be delivered is the one shown.
    outbox.insert("eu", "eu-published-new", null);

    Cli.Result r = outbox.cli().forKey("eu", "inspect", "eu-published-new");
    try {
      assertEquals(ExitCode.OK, r.exitCode(), r::toString);
      assertTrue(r.hasLine("status +PENDING"), r::toString);
    } finally {
      outbox.exec("DELETE FROM outbox WHERE message_id = 'eu-published-new'");
    }
  }

  @Test
  void controlCharactersFromRowsAreEscaped() {
    Cli.Result r = outbox.cli().forKey("eu", "list", "--status", "PENDING");

    assertFalse(r.out().contains("\u001b"), r::toString);
    assertTrue(r.out().contains("eu-\\u001b[2Jtricky"), r::toString);
  }

  /**
   * An id holding ESC and one holding the six characters of its escape print differently, as do
   * "esc-space " and "esc-space": each printed id stands for one row. --message-id and inspect take
   * the exact value, which --json gives.
   */
  @Test
  void backslashesAndTrailingSpacesOfIdsAreShownUnambiguously() {
    Cli.Result list = outbox.cli().forKey("esc", "list", "--status", "PENDING");

    assertEquals(ExitCode.OK, list.exitCode(), list::toString);
    assertTrue(list.hasLine("\\d+ +esc-\\\\u001b +0 .*"), list::toString); // ESC
    assertTrue(list.hasLine("\\d+ +esc-\\\\\\\\u001b +0 .*"), list::toString); // six characters
    assertTrue(
        list.hasLine("\\d+ +esc-space\\\\u0020 +0 +- +order/agg-esc-space\\\\u0020 .*"),
        list::toString);
    assertTrue(list.hasLine("\\d+ +esc-space +0 +- +order/agg-esc-space .*"), list::toString);

    Cli.Result esc = outbox.cli().forKey("esc", "inspect", "esc-\u001b");
    assertTrue(esc.hasLine("message id +esc-\\\\u001b"), esc::toString);
    Cli.Result sixChars = outbox.cli().forKey("esc", "inspect", "esc-\\u001b");
    assertTrue(sixChars.hasLine("message id +esc-\\\\\\\\u001b"), sixChars::toString);
    Cli.Result space = outbox.cli().forKey("esc", "inspect", "esc-space ");
    assertTrue(space.hasLine("message id +esc-space\\\\u0020"), space::toString);
    Cli.Result noSpace = outbox.cli().forKey("esc", "inspect", "esc-space");
    assertTrue(noSpace.hasLine("message id +esc-space"), noSpace::toString);

    JsonNode json = outbox.cli().forKey("esc", "list", "--status", "PENDING", "--json").json();
    List<String> ids = new ArrayList<>();
    json.forEach(row -> ids.add(row.get("message_id").asText()));
    assertEquals(List.of("esc-\u001b", "esc-\\u001b", "esc-space ", "esc-space"), ids);
  }

  /** --json escapes what the human output escapes, and parses back to the row's values. */
  @Test
  void formatAndC1CharactersFromRowsAreEscapedInJson() throws Exception {
    Cli.Result r = outbox.cli().forKey("eu", "inspect", BIDI_ID, "--json");

    assertEquals(ExitCode.OK, r.exitCode(), r::toString);
    assertTrue(r.out().contains("\"eu-1\\u202Efdp.exe\\u009B2J\""), r::toString);
    assertTrue(r.out().contains("\"c-\\u200Bzero-width\""), r::toString);
    for (char c : new char[] {'\u202E', '\u009B', '\u200B'}) {
      assertFalse(r.out().indexOf(c) >= 0, r::toString);
    }
    JsonNode json = new ObjectMapper().readTree(r.out());
    assertEquals(BIDI_ID, json.get("message_id").asText());
    assertEquals("c-\u200Bzero-width", json.get("correlation_id").asText());

    Cli.Result list = outbox.cli().forKey("eu", "list", "--status", "PENDING", "--json");
    assertTrue(list.out().contains("\"eu-1\\u202Efdp.exe\\u009B2J\""), list::toString);
    assertFalse(list.out().contains("\u202E"), list::toString);
  }
}
