package dev.outboxrelay.localstack;

import dev.outboxrelay.store.postgres.DataSourceFactory;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Keeps secrets out of what the launcher prints and writes. A URL is read as the connector reads it
 * ({@link DataSourceFactory}): user information wherever an {@code @} could make one (a password
 * may hold a {@code /}), parameter names %-decoded as the relay's data source decodes them.
 */
final class Redaction {
  private static final String MASK = "****";

  /** {@code password=...}, {@code sslpassword=...} and the like, in a text's JDBC URL. */
  private static final Pattern PASSWORD_PARAMETER =
      Pattern.compile("(?i)((?:[?&;])[a-z]*password=)[^&;\\s]*");

  /** {@code //user:secret@host} in a text's URL: the user ends at the first colon. */
  private static final Pattern USER_INFO = Pattern.compile("(//[^\\s@:/]*:)[^\\s@]*@");

  private Redaction() {}

  /**
   * Whether {@code url} carries a password: user information before its host, a parameter whose
   * name (decoded) holds "password", or a password the driver would misread before the query.
   */
  static boolean carriesPassword(String url) {
    return DataSourceFactory.hasUserInfo(url)
        || DataSourceFactory.hasMisplacedPassword(url)
        || !jdbcUrl(url).equals(url);
  }

  /**
   * {@code url} to print: all but its scheme where it has user information or a password the driver
   * would misread, else the value of every parameter whose name (decoded) holds "password", or does
   * not decode.
   */
  static String jdbcUrl(String url) {
    if (url == null) {
      return null;
    }
    int start = url.indexOf("//");
    if (start >= 0
        && (DataSourceFactory.hasUserInfo(url) || DataSourceFactory.hasMisplacedPassword(url))) {
      return url.substring(0, start + 2) + MASK; // where the password ends cannot be told
    }
    int query = url.indexOf('?');
    if (query < 0) {
      return url;
    }
    StringBuilder out = new StringBuilder(url.substring(0, query + 1));
    String[] pairs = url.substring(query + 1).split("&", -1);
    for (int i = 0; i < pairs.length; i++) {
      String pair = pairs[i];
      int eq = pair.indexOf('=');
      out.append(i == 0 ? "" : "&");
      if (eq >= 0 && namesPassword(pair.substring(0, eq))) {
        out.append(pair, 0, eq + 1).append(MASK);
      } else {
        out.append(pair);
      }
    }
    return out.toString();
  }

  /**
   * {@code text} (a library's message, which may quote a URL) to print: password parameters' values
   * and user information's passwords masked, as far as a text's URL can be told.
   */
  static String text(String text) {
    String redacted = PASSWORD_PARAMETER.matcher(text).replaceAll("$1" + MASK);
    return USER_INFO.matcher(redacted).replaceAll("$1" + MASK + "@");
  }

  private static boolean namesPassword(String name) {
    try {
      return URLDecoder.decode(name, StandardCharsets.UTF_8)
          .toLowerCase(Locale.ROOT)
          .contains("password");
    } catch (IllegalArgumentException e) {
      return true; // a malformed escape: cannot tell
    }
  }
}
