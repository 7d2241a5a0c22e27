package dev.outboxrelay.benchmark.naive;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * See {@link NaiveRelayConnector}. Autocommit throughout: every claim and every acknowledgement is
 * its own durable commit, and the acknowledgement blocks the producer's I/O thread.
 */
public class NaiveRelayTask extends SourceTask {
  private static final long IDLE_WAIT_MS = 100;

  private Connection claims;
  private Connection acks;
  private int batchSize;

  @Override
  public String version() {
    return "benchmark";
  }

  @Override
  public void start(Map<String, String> props) {
    Properties p = new Properties();
    p.setProperty("user", props.get(NaiveRelayConnector.USER));
    try {
      claims = DriverManager.getConnection(props.get(NaiveRelayConnector.URL), p);
      acks = DriverManager.getConnection(props.get(NaiveRelayConnector.URL), p);
    } catch (SQLException e) {
      throw new ConnectException("naive relay: cannot connect", e);
    }
    batchSize = Integer.parseInt(props.getOrDefault(NaiveRelayConnector.BATCH_SIZE, "500"));
  }

  @Override
  public List<SourceRecord> poll() throws InterruptedException {
    List<SourceRecord> records = new ArrayList<>();
    try (PreparedStatement select =
            claims.prepareStatement(
                "SELECT seq, aggregate_id, topic, payload FROM outbox WHERE status = 'PENDING'"
                    + " ORDER BY seq LIMIT ?");
        PreparedStatement claim =
            claims.prepareStatement(
                "UPDATE outbox SET status = 'IN_FLIGHT', lease_owner = 'naive',"
                    + " lease_expires_at = now() + interval '1 minute'"
                    + " WHERE seq = ? AND status = 'PENDING'")) {
      select.setInt(1, batchSize);
      try (ResultSet rs = select.executeQuery()) {
        while (rs.next()) {
          long seq = rs.getLong(1);
          claim.setLong(1, seq);
          if (claim.executeUpdate() == 1) {
            records.add(
                new SourceRecord(
                    Map.of("table", "outbox"),
                    Map.of("seq", seq),
                    rs.getString(3),
                    null,
                    Schema.STRING_SCHEMA,
                    rs.getString(2),
                    Schema.OPTIONAL_BYTES_SCHEMA,
                    rs.getBytes(4)));
          }
        }
      }
    } catch (SQLException e) {
      throw new ConnectException("naive relay: claim failed", e);
    }
    if (records.isEmpty()) {
      Thread.sleep(IDLE_WAIT_MS); // the naive relay's poll interval
      return null;
    }
    return records;
  }

  @Override
  public void commitRecord(SourceRecord record, RecordMetadata metadata) {
    // Runs on the producer's I/O thread: this database round trip stalls every send.
    try (PreparedStatement ps =
        acks.prepareStatement(
            "UPDATE outbox SET status = 'PUBLISHED', published_at = now(), lease_owner = NULL,"
                + " lease_expires_at = NULL, kafka_topic = ?, kafka_partition = ?,"
                + " kafka_offset = ? WHERE seq = ?")) {
      ps.setString(1, metadata.topic());
      ps.setInt(2, metadata.partition());
      ps.setLong(3, metadata.offset());
      ps.setLong(4, (Long) record.sourceOffset().get("seq"));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new ConnectException("naive relay: acknowledgement failed", e);
    }
  }

  @Override
  public void stop() {
    close(claims);
    close(acks);
  }

  private static void close(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException ignored) {
        // Stopping.
      }
    }
  }
}
