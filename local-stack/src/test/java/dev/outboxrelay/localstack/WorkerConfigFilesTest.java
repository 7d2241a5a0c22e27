package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The worker configs are valid for Connect's own DistributedConfig, with working providers. */
class WorkerConfigFilesTest {

  @ParameterizedTest
  @ValueSource(strings = {"config/connect-worker.properties", "docker/connect-worker.properties"})
  void usesOnlyKnownWorkerKeysWithValidValues(String file) {
    Map<String, String> worker = asMap(RepoFiles.properties(file));
    // Parses and validates every value, as the worker does at start-up.
    DistributedConfig parsed = new DistributedConfig(worker);
    Set<String> known = parsed.values().keySet();
    Set<String> unknown = new TreeSet<>();
    for (String key : worker.keySet()) {
      if (!known.contains(key) && !key.startsWith("config.providers.")) {
        unknown.add(key);
      }
    }
    assertTrue(unknown.isEmpty(), file + " uses keys Connect does not define: " + unknown);
  }

  /** {@code ./local-stack.sh --exactly-once} runs the local template with this one key more. */
  @Test
  void theLocalWorkerWithExactlyOnceSourceSupportIsValid() {
    Map<String, String> worker = asMap(RepoFiles.properties("config/connect-worker.properties"));
    worker.putAll(Delivery.EXACTLY_ONCE.workerSettings());
    DistributedConfig parsed = new DistributedConfig(worker);
    assertTrue(parsed.exactlyOnceSourceEnabled());
    assertFalse(
        new DistributedConfig(asMap(RepoFiles.properties("config/connect-worker.properties")))
            .exactlyOnceSourceEnabled(),
        "the default mode keeps Connect's default");
  }

  @ParameterizedTest
  @ValueSource(strings = {"config/connect-worker.properties", "docker/connect-worker.properties"})
  void declaresFileAndEnvProvidersThatExist(String file) {
    Properties worker = RepoFiles.properties(file);
    assertEquals("file,env", worker.getProperty("config.providers"));
    for (String provider : worker.getProperty("config.providers").split(",")) {
      String className = worker.getProperty("config.providers." + provider + ".class");
      assertDoesNotThrow(() -> Class.forName(className), className);
    }
    assertEquals("service_load", worker.getProperty("plugin.discovery"));
  }

  private static Map<String, String> asMap(Properties p) {
    Map<String, String> map = new java.util.HashMap<>();
    p.stringPropertyNames().forEach(k -> map.put(k, p.getProperty(k)));
    return map;
  }
}
