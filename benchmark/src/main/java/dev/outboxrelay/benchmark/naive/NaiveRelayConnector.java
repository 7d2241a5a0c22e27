package dev.outboxrelay.benchmark.naive;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * The relay teams usually start with, as a baseline: select pending rows, claim each with its own
 * UPDATE, and mark each published with a synchronous one-row UPDATE inside {@code commitRecord}.
 * One task (it has no way to share the work safely). Not part of the product.
 */
public class NaiveRelayConnector extends SourceConnector {
  public static final String URL = "connection.url";
  public static final String USER = "connection.user";
  public static final String BATCH_SIZE = "naive.batch.size";

  private Map<String, String> props;

  @Override
  public String version() {
    return "benchmark";
  }

  @Override
  public void start(Map<String, String> props) {
    this.props = Map.copyOf(props);
  }

  @Override
  public Class<? extends Task> taskClass() {
    return NaiveRelayTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return List.of(props);
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return new ConfigDef()
        .define(URL, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "JDBC URL")
        .define(USER, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "database user")
        .define(BATCH_SIZE, ConfigDef.Type.INT, 500, ConfigDef.Importance.LOW, "rows per select");
  }
}
