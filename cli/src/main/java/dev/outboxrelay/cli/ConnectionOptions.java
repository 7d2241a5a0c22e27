package dev.outboxrelay.cli;

import java.io.Console;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import picocli.CommandLine.Option;

/**
 * How to reach the database: the options every command that connects shares. The password is never
 * echoed, and the URL is never printed (it may carry credentials).
 */
public final class ConnectionOptions {
  public static final String JDBC_URL_ENV = "OUTBOX_JDBC_URL";
  public static final String USER_ENV = "OUTBOX_USER";
  public static final String PASSWORD_ENV = "OUTBOX_PASSWORD";
  static final int MAX_CONNECT_TIMEOUT_SECONDS = 3600;
  static final int MAX_STATEMENT_TIMEOUT_SECONDS = 86_400;

  @Option(
      names = "--jdbc-url",
      paramLabel = "URL",
      description =
          "PostgreSQL JDBC URL, jdbc:postgresql://host:port/database. Default: env "
              + JDBC_URL_ENV
              + ".")
  String jdbcUrl;

  @Option(
      names = "--user",
      paramLabel = "ROLE",
      description =
          "Database role. Default: env "
              + USER_ENV
              + ", else the URL's user, else the driver's default. Refused beside a user in the"
              + " URL.")
  String user;

  // Not picocli's interactive option: without a console (stdout or stdin redirected) it prompts
  // on stdout and reads an echoed line, which shows the password and breaks --json output.
  @Option(
      names = "--password",
      arity = "0..1",
      fallbackValue = "",
      paramLabel = "PASSWORD",
      description =
          "Password; without a value it is prompted for on the terminal, not echoed (refused"
              + " without one). Prefer env "
              + PASSWORD_ENV
              + " or --password-file: other users can read command lines.")
  char[] password;

  @Option(
      names = "--password-file",
      paramLabel = "FILE",
      description = "Read the password from FILE (one trailing line break is dropped).")
  Path passwordFile;

  @Option(
      names = "--connect-timeout",
      paramLabel = "SECONDS",
      defaultValue = "10",
      description =
          "Give up connecting after this many seconds (1 to "
              + MAX_CONNECT_TIMEOUT_SECONDS
              + "). Default: ${DEFAULT-VALUE}.")
  int connectTimeoutSeconds;

  @Option(
      names = "--statement-timeout",
      paramLabel = "SECONDS",
      defaultValue = "0",
      description =
          "Cancel any statement that runs longer than this many seconds (PostgreSQL"
              + " statement_timeout, set for the CLI's sessions only, after any options of the"
              + " URL), 0 to "
              + MAX_STATEMENT_TIMEOUT_SECONDS
              + "; 0 keeps the server's (or the URL's) setting. Default: ${DEFAULT-VALUE}.")
  int statementTimeoutSeconds;

  /**
   * Resolves options, then the environment; fails as a usage error, never echoing a value. An
   * option given blank ({@code --user "$OPS_USER"} with the variable unset) is refused, not taken
   * for absent: the environment would then silently connect somewhere, or as someone, else.
   */
  public ConnectionSettings resolve(Map<String, String> env) {
    requireNotBlank("--jdbc-url", jdbcUrl, JDBC_URL_ENV);
    requireNotBlank("--user", user, USER_ENV);
    if (passwordFile != null && passwordFile.toString().isBlank()) {
      throw CliException.usage("--password-file is blank: give the file's path");
    }
    String url = firstNonBlank(jdbcUrl, env.get(JDBC_URL_ENV));
    if (url == null) {
      throw CliException.usage("no database given: pass --jdbc-url or set " + JDBC_URL_ENV);
    }
    if (password != null && passwordFile != null) {
      throw CliException.usage("give either --password or --password-file, not both");
    }
    if (connectTimeoutSeconds < 1 || connectTimeoutSeconds > MAX_CONNECT_TIMEOUT_SECONDS) {
      throw CliException.usage(
          "--connect-timeout must be between 1 and " + MAX_CONNECT_TIMEOUT_SECONDS + " seconds");
    }
    if (statementTimeoutSeconds < 0 || statementTimeoutSeconds > MAX_STATEMENT_TIMEOUT_SECONDS) {
      throw CliException.usage(
          "--statement-timeout must be between 0 and "
              + MAX_STATEMENT_TIMEOUT_SECONDS
              + " seconds");
    }
    requireOnePlace(url, env);
    return new ConnectionSettings(
        url,
        firstNonBlank(user, env.get(USER_ENV)),
        resolvePassword(env),
        Duration.ofSeconds(connectTimeoutSeconds),
        Duration.ofSeconds(statementTimeoutSeconds));
  }

  /**
   * The driver takes a user or password in the URL over the one the CLI passes, so a URL with a
   * {@code user} (or {@code password}) beside {@code --user} (or a password option) would silently
   * connect as the URL says: refused, naming where each came from, never a value. A URL that is not
   * the driver's is left for {@link Database#open} to refuse.
   */
  private void requireOnePlace(String url, Map<String, String> env) {
    Properties inUrl = Database.urlCredentials(url);
    if (inUrl == null) {
      return;
    }
    String userSource =
        user != null && !user.isBlank()
            ? "--user"
            : env.get(USER_ENV) != null && !env.get(USER_ENV).isBlank() ? USER_ENV : null;
    if (inUrl.containsKey("user") && userSource != null) {
      throw CliException.usage(
          "the JDBC URL has a user and "
              + userSource
              + " gives one too (the URL's would be used): give the user in one place only");
    }
    String passwordSource =
        password != null
            ? "--password"
            : passwordFile != null
                ? "--password-file"
                : env.get(PASSWORD_ENV) != null && !env.get(PASSWORD_ENV).isEmpty()
                    ? PASSWORD_ENV
                    : null;
    if (inUrl.containsKey("password") && passwordSource != null) {
      throw CliException.usage(
          "the JDBC URL has a password and "
              + passwordSource
              + " gives one too (the URL's would be used): give the password in one place only");
    }
  }

  private String resolvePassword(Map<String, String> env) {
    if (password != null && password.length == 0) {
      return prompt();
    }
    if (password != null) {
      return new String(password);
    }
    if (passwordFile != null) {
      return readPasswordFile(passwordFile);
    }
    String fromEnv = env.get(PASSWORD_ENV);
    return fromEnv == null || fromEnv.isEmpty() ? null : fromEnv;
  }

  /** Read from the terminal without echo; none (input or output redirected) is a usage error. */
  private static String prompt() {
    Console console = System.console();
    if (!isTerminal(console)) {
      throw CliException.usage(
          "--password without a value needs a terminal to prompt on: set "
              + PASSWORD_ENV
              + " or use --password-file");
    }
    char[] typed = console.readPassword("Password: ");
    if (typed == null || typed.length == 0) {
      throw CliException.usage("no password was typed");
    }
    return new String(typed);
  }

  /**
   * Whether {@code console} is a terminal's. Before Java 22 {@code System.console()} is null when
   * the input or output is redirected; Java 22 to 24 return a console all the same (one that may
   * echo, and prompt onto the redirected output), and only {@code Console.isTerminal()}, new in 22,
   * tells. Called by reflection: the CLI runs on Java 17.
   */
  static boolean isTerminal(Console console) {
    if (console == null) {
      return false;
    }
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (NoSuchMethodException e) {
      return true; // before Java 22: a console exists only on a terminal
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  private static String readPasswordFile(Path file) {
    String content;
    try {
      content = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      throw CliException.usage("--password-file cannot be read");
    }
    if (content.endsWith("\r\n")) {
      content = content.substring(0, content.length() - 2);
    } else if (content.endsWith("\n")) {
      content = content.substring(0, content.length() - 1);
    }
    if (content.isEmpty()) {
      throw CliException.usage("--password-file is empty");
    }
    return content;
  }

  private static void requireNotBlank(String option, String value, String variable) {
    if (value != null && value.isBlank()) {
      throw CliException.usage(
          option + " is blank: give a value, or leave the option out to use " + variable);
    }
  }

  private static String firstNonBlank(String first, String second) {
    if (first != null && !first.isBlank()) {
      return first;
    }
    return second == null || second.isBlank() ? null : second;
  }
}
