package dev.outboxrelay.localstack;

import java.util.regex.Pattern;

/** Keeps secrets out of what the launcher prints and writes. */
final class Redaction {
  /** {@code password=...}, {@code sslpassword=...} and the like, in a JDBC URL's parameters. */
  private static final Pattern PASSWORD_PARAMETER =
      Pattern.compile("(?i)((?:[?&;])[a-z]*password=)[^&;]*");

  /** {@code //user:secret@host}: not a PostgreSQL JDBC form, but never print it either. */
  private static final Pattern USER_INFO = Pattern.compile("(//[^/:@]*:)[^/@]*@");

  private Redaction() {}

  static String jdbcUrl(String url) {
    if (url == null) {
      return null;
    }
    String redacted = PASSWORD_PARAMETER.matcher(url).replaceAll("$1****");
    return USER_INFO.matcher(redacted).replaceAll("$1****@");
  }
}
