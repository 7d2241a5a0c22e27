package dev.outboxrelay.mapping;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.CharacterCodingException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Strict JSON reading for payloads and header objects. Failures carry no message: what went wrong
 * is told by a reason code, never by parser text that could quote the data.
 */
final class JsonValues {
  /**
   * How deep a payload may nest. Jackson reads and writes at most 1,000 levels, and a converter
   * that wraps the value (JsonConverter's schema envelope) adds one when it writes: a payload at
   * Jackson's reading limit would fail the task there instead of being parked here. An inferred
   * schema nests deeper than its value and has its own limit ({@link
   * JsonSchemaInference#MAX_SCHEMA_DEPTH}).
   */
  static final int MAX_NESTING_DEPTH = 900;

  /**
   * Strings and member names as long as a payload may be (payload.max.bytes bounds them; Jackson's
   * defaults, 20M and 50k characters, would call valid JSON invalid). Numbers keep Jackson's limit
   * of 1,000 digits: turning a longer one into a value costs more than linear time.
   */
  private static final JsonFactory FACTORY =
      factory(StreamReadConstraints.defaults().getMaxNumberLength());

  /**
   * Numbers of any length, for reading them as text only (tokenizing one is linear): header values,
   * and telling a number too long to convert from JSON that is not well-formed.
   */
  private static final JsonFactory TEXT_NUMBER_FACTORY = factory(Integer.MAX_VALUE);

  private static final ObjectMapper MAPPER =
      JsonMapper.builder(FACTORY)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .build();

  /** The input is not exactly one well-formed JSON value (of the expected shape). */
  static final class MalformedJson extends Exception {
    private static final long serialVersionUID = 1L;

    MalformedJson() {
      super(null, null, false, false);
    }
  }

  /** The JSON holds a number a schemaless Connect value cannot carry unchanged. */
  static final class UnrepresentableNumber extends Exception {
    private static final long serialVersionUID = 1L;

    UnrepresentableNumber() {
      super(null, null, false, false);
    }
  }

  private JsonValues() {}

  /**
   * Parses one JSON value into a schemaless Connect value: objects as {@code Map<String, Object>}
   * in member order, arrays as {@code List}, strings, booleans, null, integers as {@code Long} and
   * other numbers as {@code Double}, each only when that is exact.
   */
  static Object toConnectValue(byte[] json) throws MalformedJson, UnrepresentableNumber {
    return convert(parse(json));
  }

  /**
   * Exactly one JSON value, strictly (no duplicate member names, nothing after it).
   *
   * @throws UnrepresentableNumber if the JSON is well-formed but holds a number of more than 1,000
   *     digits, which is not converted (Jackson's limit counts digits, not sign, point or
   *     exponent), or one whose exponent is beyond a 32-bit integer
   */
  static JsonNode parse(byte[] json) throws MalformedJson, UnrepresentableNumber {
    String text;
    try {
      text = StrictUtf8.decode(json);
    } catch (CharacterCodingException e) {
      throw new MalformedJson();
    }
    if (!text.isEmpty() && text.charAt(0) == '\uFEFF') {
      text = text.substring(1); // a byte order mark, which RFC 8259 (8.1) lets a parser ignore
    }
    JsonNode tree;
    try {
      // As text: from bytes, Jackson guesses UTF-16 or UTF-32 and accepts some malformed UTF-8
      // (a surrogate encoded as three bytes, an overlong form), sending a string that differs
      // from the payload's instead of parking the row.
      tree = MAPPER.readTree(text);
    } catch (StreamConstraintsException e) {
      // Too deep, or a number too long: only the second leaves well-formed JSON behind.
      if (isOneWellFormedValue(json)) {
        throw new UnrepresentableNumber();
      }
      throw new MalformedJson();
    } catch (NumberFormatException e) {
      // A number whose exponent a BigDecimal cannot hold (1e-2147483649), read as far as the
      // number: unrepresentable if the rest is well-formed too, by the parser that converts none.
      if (isOneWellFormedValue(text)) {
        throw new UnrepresentableNumber();
      }
      throw new MalformedJson();
    } catch (IOException e) {
      throw new MalformedJson();
    }
    if (tree == null || tree.isMissingNode()) {
      throw new MalformedJson();
    }
    return withNegativeZeros(text, tree);
  }

  /**
   * {@code tree} with each negative zero of a decimal ({@code -0.0}, {@code -0e3}) as the double
   * -0.0: read as a BigDecimal, which has no negative zero, it was published as 0.0, a value of
   * another sign (JsonConverter writes -0.0, and Avro and Protobuf doubles carry it). An integer -0
   * stays 0: no integer type has a negative zero. Only a text holding "-0." or "-0e" is read again
   * (not one of dates, "2026-07-01").
   */
  private static JsonNode withNegativeZeros(String text, JsonNode tree) throws MalformedJson {
    if (!mayHoldNegativeZero(text)) {
      return tree;
    }
    JsonNode patched = tree;
    try (JsonParser parser = TEXT_NUMBER_FACTORY.createParser(text)) {
      for (JsonToken token = parser.nextToken(); token != null; token = parser.nextToken()) {
        if (token == JsonToken.VALUE_NUMBER_FLOAT && isNegativeZero(parser.getText())) {
          patched = replaced(patched, parser.getParsingContext().pathAsPointer());
        }
      }
    } catch (IOException e) {
      throw new MalformedJson(); // read once already: not expected
    }
    return patched;
  }

  /** "-0" then '.', 'e' or 'E', not a fraction with a digit other than 0 ("-0.25"). */
  static boolean mayHoldNegativeZero(String text) {
    int n = text.length();
    for (int at = text.indexOf("-0"); at >= 0; at = text.indexOf("-0", at + 2)) {
      int i = at + 2;
      char next = i < n ? text.charAt(i) : ' ';
      if (next == 'e' || next == 'E') {
        return true;
      }
      if (next == '.') {
        i++;
        while (i < n && text.charAt(i) == '0') {
          i++;
        }
        if (i >= n || text.charAt(i) < '1' || text.charAt(i) > '9') {
          return true;
        }
      }
    }
    return false;
  }

  /** A decimal literal whose digits before any exponent are all zeros, with a minus sign. */
  private static boolean isNegativeZero(String literal) {
    if (!literal.startsWith("-")) {
      return false;
    }
    for (int i = 1; i < literal.length(); i++) {
      char c = literal.charAt(i);
      if (c == 'e' || c == 'E') {
        return true;
      }
      if (c != '0' && c != '.') {
        return false;
      }
    }
    return true;
  }

  /** {@code tree} with the value at {@code at} replaced by -0.0 (the tree itself at the root). */
  private static JsonNode replaced(JsonNode tree, JsonPointer at) {
    DoubleNode negativeZero = DoubleNode.valueOf(-0.0);
    if (at.matches()) {
      return negativeZero;
    }
    JsonNode parent = tree.at(at.head());
    JsonPointer last = at.last();
    if (parent instanceof ObjectNode object) {
      object.set(last.getMatchingProperty(), negativeZero);
    } else if (parent instanceof ArrayNode array) {
      array.set(last.getMatchingIndex(), negativeZero);
    }
    return tree;
  }

  private static boolean isOneWellFormedValue(byte[] json) {
    try (JsonParser parser = TEXT_NUMBER_FACTORY.createParser(json)) {
      return isOneWellFormedValue(parser);
    } catch (IOException e) {
      return false;
    }
  }

  /** As the text was decoded (strict UTF-8, no byte order mark), which the tree was read from. */
  private static boolean isOneWellFormedValue(String text) {
    try (JsonParser parser = TEXT_NUMBER_FACTORY.createParser(text)) {
      return isOneWellFormedValue(parser);
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean isOneWellFormedValue(JsonParser parser) throws IOException {
    if (parser.nextToken() == null) {
      return false;
    }
    parser.skipChildren();
    return parser.nextToken() == null;
  }

  private static JsonFactory factory(int maxNumberLength) {
    return JsonFactory.builder()
        .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
        .streamReadConstraints(
            StreamReadConstraints.builder()
                .maxNestingDepth(MAX_NESTING_DEPTH)
                .maxStringLength(Integer.MAX_VALUE)
                .maxNameLength(Integer.MAX_VALUE)
                .maxNumberLength(maxNumberLength)
                .build())
        .build();
  }

  private static Object convert(JsonNode node) throws UnrepresentableNumber {
    switch (node.getNodeType()) {
      case OBJECT:
        Map<String, Object> object = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> member : node.properties()) {
          object.put(member.getKey(), convert(member.getValue()));
        }
        return object;
      case ARRAY:
        List<Object> array = new ArrayList<>(node.size());
        for (JsonNode element : node) {
          array.add(convert(element));
        }
        return array;
      case STRING:
        return node.textValue();
      case BOOLEAN:
        return node.booleanValue();
      case NULL:
        return null;
      case NUMBER:
        return number(node);
      default:
        // Binary, POJO or missing nodes never come out of parsing text.
        throw new IllegalStateException("unexpected JSON node type " + node.getNodeType());
    }
  }

  private static Object number(JsonNode node) throws UnrepresentableNumber {
    if (node.isIntegralNumber()) {
      if (!node.canConvertToLong()) {
        throw new UnrepresentableNumber();
      }
      return node.longValue();
    }
    return exactDouble(node);
  }

  /** A non-integral number as the double that names exactly its value. */
  static double exactDouble(JsonNode node) throws UnrepresentableNumber {
    if (node.isDouble()) {
      return node.doubleValue(); // a negative zero, the only double parsing leaves (-0.0)
    }
    // Floats are parsed as BigDecimal, so the literal's exact value is known. JsonConverter writes
    // a Double with Double.toString; it must name the same number the payload did.
    BigDecimal exact = node.decimalValue();
    double approximation = exact.doubleValue();
    if (!Double.isFinite(approximation)
        || BigDecimal.valueOf(approximation).compareTo(exact) != 0) {
      throw new UnrepresentableNumber();
    }
    return approximation;
  }

  /**
   * Parses a JSON object of scalar members into header values, in member order: strings as they
   * are, numbers exactly as written, booleans as {@code true}/{@code false}, null as null.
   */
  static Map<String, String> toHeaderValues(String json) throws MalformedJson {
    Map<String, String> headers = new LinkedHashMap<>();
    try (JsonParser parser = TEXT_NUMBER_FACTORY.createParser(json)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        throw new MalformedJson();
      }
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String name = parser.currentName();
        JsonToken value = parser.nextToken();
        if (value == null || value.isStructStart()) {
          throw new MalformedJson();
        }
        headers.put(name, value == JsonToken.VALUE_NULL ? null : parser.getText());
      }
      if (parser.currentToken() != JsonToken.END_OBJECT || parser.nextToken() != null) {
        throw new MalformedJson();
      }
    } catch (IOException e) {
      throw new MalformedJson();
    }
    return headers;
  }
}
