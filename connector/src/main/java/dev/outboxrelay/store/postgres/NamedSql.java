package dev.outboxrelay.store.postgres;

import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A statement written with named parameters ({@code :name}), translated once into JDBC's positional
 * {@code ?}. A value is bound once, by name, and lands at every place the name occurs; a name left
 * unbound or not in the statement is an error, never a shifted parameter.
 *
 * <p>A colon starts a parameter only where SQL would read a token: not in a {@code ::} cast, nor
 * inside a string literal, a quoted identifier or a comment. A positional {@code ?} is refused, and
 * so is a dollar sign (dollar quoting is not supported), so nothing can shift the positions.
 *
 * <p>Public so that the operator tools write and bind their statements the same way.
 */
public final class NamedSql {
  private final String jdbc;
  private final Map<String, int[]> positions;

  private NamedSql(String jdbc, Map<String, int[]> positions) {
    this.jdbc = jdbc;
    this.positions = positions;
  }

  public static NamedSql parse(String sql) {
    StringBuilder out = new StringBuilder(sql.length());
    Map<String, List<Integer>> found = new LinkedHashMap<>();
    int count = 0;
    for (int i = 0, n = sql.length(); i < n; ) {
      char ch = sql.charAt(i);
      int end = i + 1;
      if (ch == '\'' || ch == '"') {
        // E'...' (the E a token of its own) takes backslash escapes, so \' does not close it.
        boolean backslashes =
            ch == '\''
                && i > 0
                && "eE".indexOf(sql.charAt(i - 1)) >= 0
                && (i == 1 || !isNamePart(sql.charAt(i - 2)));
        end = closing(sql, i, ch, backslashes);
      } else if (sql.startsWith("--", i)) {
        end = sql.indexOf('\n', i) < 0 ? n : sql.indexOf('\n', i);
      } else if (sql.startsWith("/*", i)) {
        end = commentEnd(sql, i);
      } else if (sql.startsWith("::", i)) {
        end = i + 2;
      } else if (ch == ':' && end < n && isNamePart(sql.charAt(end)) && !isDigit(sql.charAt(end))) {
        while (end < n && isNamePart(sql.charAt(end))) {
          end++;
        }
        found.computeIfAbsent(sql.substring(i + 1, end), k -> new ArrayList<>()).add(++count);
        out.append('?');
        i = end;
        continue;
      } else if (ch == '?') {
        throw new IllegalArgumentException("positional ? at offset " + i + ": name it :like_this");
      } else if (ch == '$') {
        throw new IllegalArgumentException(
            "$ at offset " + i + ": dollar quotes are not supported");
      }
      out.append(sql, i, end);
      i = end;
    }
    Map<String, int[]> positions = new LinkedHashMap<>();
    found.forEach(
        (name, at) -> positions.put(name, at.stream().mapToInt(Integer::intValue).toArray()));
    return new NamedSql(out.toString(), Collections.unmodifiableMap(positions));
  }

  private static boolean isNamePart(char ch) {
    return ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || isDigit(ch);
  }

  private static boolean isDigit(char ch) {
    return ch >= '0' && ch <= '9';
  }

  /** The offset after the quote that closes the one at {@code start}; a doubled quote is text. */
  private static int closing(String sql, int start, char quote, boolean backslashes) {
    for (int i = start + 1; i < sql.length(); i++) {
      char ch = sql.charAt(i);
      if (backslashes && ch == '\\') {
        i++;
      } else if (ch == quote) {
        if (i + 1 < sql.length() && sql.charAt(i + 1) == quote) {
          i++;
        } else {
          return i + 1;
        }
      }
    }
    throw new IllegalArgumentException("unterminated " + quote + " at offset " + start);
  }

  /** The offset after the block comment at {@code start}; PostgreSQL's block comments nest. */
  private static int commentEnd(String sql, int start) {
    int depth = 0;
    for (int i = start; i + 1 < sql.length(); i++) {
      if (sql.startsWith("/*", i)) {
        depth++;
        i++;
      } else if (sql.startsWith("*/", i)) {
        i++;
        if (--depth == 0) {
          return i + 1;
        }
      }
    }
    throw new IllegalArgumentException("unterminated comment at offset " + start);
  }

  /** The statement for {@link java.sql.Connection#prepareStatement}, with {@code ?} parameters. */
  public String jdbc() {
    return jdbc;
  }

  /** The parameter names, in order of first occurrence. */
  public Set<String> names() {
    return positions.keySet();
  }

  /** The 1-based JDBC positions of {@code name}. */
  public int[] positions(String name) {
    int[] at = positions.get(name);
    if (at == null) {
      throw new IllegalArgumentException("no parameter :" + name + " in the statement");
    }
    return at.clone();
  }

  /**
   * Binds {@code ps}, prepared from {@link #jdbc()} (or from it behind a prefix without parameters,
   * such as {@code EXPLAIN}).
   */
  public Binder bind(PreparedStatement ps) {
    return new Binder(ps);
  }

  @Override
  public String toString() {
    return jdbc;
  }

  /** Sets one value at one position. */
  @FunctionalInterface
  public interface Setter {
    void set(PreparedStatement ps, int index) throws SQLException;
  }

  /** Binds each parameter once, by name; executes only when every parameter has a value. */
  public final class Binder {
    private final PreparedStatement ps;
    private final Set<String> bound = new HashSet<>();

    private Binder(PreparedStatement ps) {
      this.ps = ps;
    }

    public Binder set(String name, Setter setter) throws SQLException {
      int[] at = positions(name);
      if (!bound.add(name)) {
        throw new IllegalStateException("parameter :" + name + " is bound twice");
      }
      for (int index : at) {
        setter.set(ps, index);
      }
      return this;
    }

    public Binder setInt(String name, int value) throws SQLException {
      return set(name, (p, i) -> p.setInt(i, value));
    }

    public Binder setLong(String name, long value) throws SQLException {
      return set(name, (p, i) -> p.setLong(i, value));
    }

    public Binder setBoolean(String name, boolean value) throws SQLException {
      return set(name, (p, i) -> p.setBoolean(i, value));
    }

    public Binder setString(String name, String value) throws SQLException {
      return set(name, (p, i) -> p.setString(i, value));
    }

    public Binder setBytes(String name, byte[] value) throws SQLException {
      return set(name, (p, i) -> p.setBytes(i, value));
    }

    public Binder setArray(String name, Array value) throws SQLException {
      return set(name, (p, i) -> p.setArray(i, value));
    }

    /** {@code value}, or SQL NULL of {@code nullType} when it is null. */
    public Binder setObject(String name, Object value, int nullType) throws SQLException {
      return set(
          name,
          (p, i) -> {
            if (value == null) {
              p.setNull(i, nullType);
            } else {
              p.setObject(i, value);
            }
          });
    }

    /** The statement, once every parameter has a value. */
    public PreparedStatement ready() {
      List<String> missing = new ArrayList<>();
      for (String name : positions.keySet()) {
        if (!bound.contains(name)) {
          missing.add(":" + name);
        }
      }
      if (!missing.isEmpty()) {
        throw new IllegalStateException("parameter not bound: " + String.join(", ", missing));
      }
      return ps;
    }

    public ResultSet executeQuery() throws SQLException {
      return ready().executeQuery();
    }

    public int executeUpdate() throws SQLException {
      return ready().executeUpdate();
    }
  }
}
