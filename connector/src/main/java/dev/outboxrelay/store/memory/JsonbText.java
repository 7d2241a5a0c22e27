package dev.outboxrelay.store.memory;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A row's headers, an object of strings (or nulls), as PostgreSQL's {@code jsonb} gives them back:
 * the last of duplicate keys, keys ordered by their length in UTF-8 bytes and then by those bytes,
 * written {@code {"k": "v", "k2": null}}. The relay adds headers to a record in that order, so a
 * store that kept the writer's text handed the same row's headers over in another order.
 */
final class JsonbText {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static final Comparator<byte[]> JSONB_KEY_ORDER =
      Comparator.<byte[]>comparingInt(key -> key.length).thenComparing(Arrays::compareUnsigned);

  private JsonbText() {}

  /** {@code json} as jsonb prints it; null stays null. */
  static String ofHeaders(String json) {
    if (json == null) {
      return null;
    }
    JsonNode object;
    try {
      object = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers are not a JSON object", e);
    }
    if (object == null || !object.isObject()) {
      throw new IllegalArgumentException("headers are not a JSON object");
    }
    List<Map.Entry<String, JsonNode>> members = new ArrayList<>(object.properties());
    members.sort(
        Comparator.comparing(
            (Map.Entry<String, JsonNode> m) -> m.getKey().getBytes(StandardCharsets.UTF_8),
            JSONB_KEY_ORDER));
    StringBuilder out = new StringBuilder("{");
    for (Map.Entry<String, JsonNode> member : members) {
      if (out.length() > 1) {
        out.append(", ");
      }
      quote(member.getKey(), out);
      out.append(": ");
      JsonNode value = member.getValue();
      if (value.isNull()) {
        out.append("null");
      } else if (value.isTextual()) {
        quote(value.textValue(), out);
      } else {
        throw new IllegalArgumentException("a header value is not a string");
      }
    }
    return out.append('}').toString();
  }

  /** As PostgreSQL's escape_json: the two-character escapes, other controls as lower-case \\u. */
  private static void quote(String text, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
