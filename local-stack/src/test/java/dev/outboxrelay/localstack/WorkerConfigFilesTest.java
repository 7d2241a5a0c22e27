package dev.outboxrelay.localstack;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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

  /**
   * The file's settings, with the file provider's allowed path moved to a directory that exists
   * here (the worker refuses to start when it does not; the deployments create theirs).
   */
  private Map<String, String> asMap(Properties p) {
    Map<String, String> map = new java.util.HashMap<>();
    p.stringPropertyNames().forEach(k -> map.put(k, p.getProperty(k)));
    map.computeIfPresent(ConnectWorker.FILE_PROVIDER_PATHS, (k, v) -> secrets.toString());
    return map;
  }

  @TempDir Path secrets;

  /** A worker whose file provider may read a directory that does not exist does not start. */
  @Test
  void theFileProvidersAllowedPathMustExist() {
    Map<String, String> worker = asMap(RepoFiles.properties("config/connect-worker.properties"));
    worker.put(ConnectWorker.FILE_PROVIDER_PATHS, secrets.resolve("missing").toString());
    assertThrows(ConfigException.class, () -> new DistributedConfig(worker));
  }
}
