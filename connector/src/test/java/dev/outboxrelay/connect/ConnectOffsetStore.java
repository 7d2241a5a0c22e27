package dev.outboxrelay.connect;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * Committed offsets kept the way Connect keeps them: under the bytes of the source partition,
 * serialized by its internal JSON converter (schemaless, a map's entries in iteration order) as
 * {@code [namespace, partition]}. So a partition is found only under the key order it was written
 * with, as in a real offsets topic.
 */
final class ConnectOffsetStore {
  private static final String NAMESPACE = "outbox-relay-test";

  private final JsonConverter keys = new JsonConverter();
  private final Map<ByteBuffer, Map<String, Object>> committed = new HashMap<>();

  ConnectOffsetStore() {
    keys.configure(Map.of("schemas.enable", "false", "converter.type", "key"));
  }

  void commit(Map<String, ?> partition, Map<String, Object> offset) {
    committed.put(key(partition), offset);
  }

  /** The bytes Connect stores and looks a partition up under. */
  byte[] serialized(Map<String, ?> partition) {
    return keys.fromConnectData(NAMESPACE, null, Arrays.asList(NAMESPACE, partition));
  }

  /**
   * The partition's key as Connect's offsets REST endpoints look it up: read back from its bytes
   * (into the converter's own map) and serialized again.
   */
  byte[] readBackAndSerializedAgain(Map<String, ?> partition) {
    List<?> key = (List<?>) keys.toConnectData(NAMESPACE, serialized(partition)).value();
    return keys.fromConnectData(NAMESPACE, null, key);
  }

  private ByteBuffer key(Map<String, ?> partition) {
    return ByteBuffer.wrap(serialized(partition));
  }

  OffsetStorageReader reader() {
    return new OffsetStorageReader() {
      @Override
      public <T> Map<String, Object> offset(Map<String, T> partition) {
        return committed.get(key(partition));
      }

      @Override
      public <T> Map<Map<String, T>, Map<String, Object>> offsets(
          Collection<Map<String, T>> partitions) {
        Map<Map<String, T>, Map<String, Object>> found = new HashMap<>();
        for (Map<String, T> p : partitions) {
          Map<String, Object> offset = committed.get(key(p));
          if (offset != null) {
            found.put(p, offset);
          }
        }
        return found;
      }
    };
  }
}
