package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.OutboxDb;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The task on the Connect API of workers older than the Kafka this project builds with: 4.0 has no
 * plugin metrics ({@code SourceTaskContext.pluginMetrics()}, KIP-877, came with 4.1), nor has 3.9.
 * The connector and its own dependencies are loaded in a class loader of their own with that
 * release's {@code connect-api} and {@code kafka-clients} (copied by the build into
 * target/older-kafka) in place of this build's, as a worker of that release loads a plugin. The
 * connector must validate its config and start, and the task start, relay a row (claim, record,
 * acknowledgement) and stop: docs/deployment.md says such workers run the connector without its
 * task metrics.
 */
class OlderWorkerApiTest {
  private static final String KEY = "older-api";

  @ParameterizedTest(name = "Kafka {0}, {1}")
  @CsvSource({
    "4.0.2, at-least-once",
    "4.0.2, exactly-once",
    "3.9.1, at-least-once",
    "3.9.1, exactly-once"
  })
  void theTaskRelaysARowOnTheApiOfAnOlderWorker(String kafkaVersion, String guarantee)
      throws Exception {
    try (OutboxDb db = OutboxDb.fresh("older_api").migrate();
        URLClassLoader worker = olderWorker(kafkaVersion)) {
      Class<?> contextClass = worker.loadClass("org.apache.kafka.connect.source.SourceTaskContext");
      assertTrue(
          Stream.of(contextClass.getMethods()).noneMatch(m -> m.getName().equals("pluginMetrics")),
          "an API without plugin metrics");
      assertThrows(
          ClassNotFoundException.class,
          () -> worker.loadClass("org.apache.kafka.common.metrics.PluginMetrics"),
          "nothing of this build's Kafka on the worker's class path");
      Map<String, String> config = ConnectCluster.relayConfig(db, KEY, 1);
      config.put("delivery.guarantee", guarantee);
      if (guarantee.equals("exactly-once")) {
        config.put("exactly.once.support", "required");
      }
      Object connector = newInstance(worker, OutboxSourceConnector.class.getName());
      for (Object value : (List<?>) call(call(connector, "validate", config), "configValues")) {
        assertEquals(List.of(), call(value, "errorMessages"), () -> value.toString());
      }
      call(connector, "start", config);
      @SuppressWarnings("unchecked")
      Map<String, String> taskConfig =
          ((List<Map<String, String>>) call(connector, "taskConfigs", 1)).get(0);

      Object task = newInstance(worker, OutboxSourceTask.class.getName());
      call(task, "initialize", context(contextClass, worker, taskConfig));
      call(task, "start", taskConfig);
      try {
        db.insert(KEY, List.of(OutboxDb.message("m-1", "a-1")));
        List<?> records =
            await("the row as a record")
                .atMost(Duration.ofSeconds(30))
                .until(() -> (List<?>) call(task, "poll"), r -> r != null && !r.isEmpty());
        assertEquals(1, records.size());
        call(task, "commitRecord", records.get(0), metadata(worker));
        await("the row PUBLISHED")
            .atMost(Duration.ofSeconds(30))
            .until(() -> db.count("PUBLISHED", KEY) == 1);
        // The task's metrics, as beans of its own under the name 4.1's plugin metrics have
        await("published-total 1")
            .atMost(Duration.ofSeconds(30))
            .until(
                () ->
                    ManagementFactory.getPlatformMBeanServer()
                        .getAttribute(bean(taskConfig), "published-total"),
                value -> Double.valueOf(1.0).equals(value));
      } finally {
        call(task, "stop");
      }
      assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(bean(taskConfig)));
    }
  }

  /** The bean Connect 4.1 would publish the task's plugin metrics as. */
  private static ObjectName bean(Map<String, String> taskConfig)
      throws MalformedObjectNameException {
    return new ObjectName(
        "kafka.connect:type=plugins,connector="
            + taskConfig.get(OutboxSourceTask.CONNECTOR_NAME)
            + ",task=0");
  }

  /**
   * This build's classes and dependencies, but Kafka's own jars of {@code kafkaVersion}; nothing
   * from the test class loader but the JDK's.
   */
  private static URLClassLoader olderWorker(String kafkaVersion) throws IOException {
    List<URL> urls = new ArrayList<>();
    try (Stream<Path> jars = Files.list(Path.of("target", "older-kafka", kafkaVersion))) {
      for (Path jar : jars.toList()) {
        urls.add(jar.toUri().toURL());
      }
    }
    assertEquals(2, urls.size(), "connect-api and kafka-clients " + kafkaVersion);
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String path = entry.replace('\\', '/');
      if (!path.contains("/org/apache/kafka/") && !path.endsWith("test-classes")) {
        urls.add(Path.of(entry).toUri().toURL());
      }
    }
    return new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
  }

  /**
   * A task context of the older API: the task's config, no offsets committed yet, and no
   * transaction context (the connector defines no transaction boundaries of its own).
   */
  private static Object context(Class<?> contextClass, ClassLoader worker, Map<String, String> cfg)
      throws ClassNotFoundException {
    Class<?> readerClass = worker.loadClass("org.apache.kafka.connect.storage.OffsetStorageReader");
    Object reader =
        Proxy.newProxyInstance(
            worker, new Class<?>[] {readerClass}, (proxy, method, args) -> Map.of());
    return Proxy.newProxyInstance(
        worker,
        new Class<?>[] {contextClass},
        (proxy, method, args) ->
            switch (method.getName()) {
              case "configs" -> cfg;
              case "offsetStorageReader" -> reader;
              default -> null; // transactionContext
            });
  }

  /** Kafka's acknowledgement: partition 0, offset 7. */
  private static Object metadata(ClassLoader worker) throws ReflectiveOperationException {
    Class<?> partitionClass = worker.loadClass("org.apache.kafka.common.TopicPartition");
    Object partition =
        partitionClass.getConstructor(String.class, int.class).newInstance("outbox.order", 0);
    Class<?> metadataClass = worker.loadClass("org.apache.kafka.clients.producer.RecordMetadata");
    Constructor<?> constructor =
        metadataClass.getConstructor(
            partitionClass, long.class, int.class, long.class, int.class, int.class);
    return constructor.newInstance(partition, 7L, 0, System.currentTimeMillis(), 1, 1);
  }

  private static Object newInstance(ClassLoader worker, String className)
      throws ReflectiveOperationException {
    return worker.loadClass(className).getConstructor().newInstance();
  }

  /** Calls the public method of that name and arity, as the worker would. */
  private static Object call(Object target, String name, Object... args) throws Exception {
    for (Method method : target.getClass().getMethods()) {
      if (method.getName().equals(name) && method.getParameterCount() == args.length) {
        try {
          return method.invoke(target, args);
        } catch (InvocationTargetException e) {
          throw e.getCause() instanceof Exception cause
              ? cause
              : new RuntimeException(e.getCause());
        }
      }
    }
    throw new NoSuchMethodException(name);
  }
}
