package dev.outboxrelay.cli;

import dev.outboxrelay.cli.command.AdoptDebeziumTableCommand;
import dev.outboxrelay.cli.command.DiscardCommand;
import dev.outboxrelay.cli.command.InspectCommand;
import dev.outboxrelay.cli.command.ListCommand;
import dev.outboxrelay.cli.command.MigrateCommand;
import dev.outboxrelay.cli.command.ParkCommand;
import dev.outboxrelay.cli.command.PurgeCommand;
import dev.outboxrelay.cli.command.RequeueCommand;
import dev.outboxrelay.cli.command.SchemaSqlCommand;
import dev.outboxrelay.cli.command.StatusCommand;
import dev.outboxrelay.store.OutboxStoreException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * {@code outbox-relay-cli}: operator tooling for the outbox, run outside Kafka Connect. Every data
 * command works on exactly one instance key and never reads or changes another key's rows, legacy
 * rows without a key, or rows under a lease (but {@code park --in-flight}, on request).
 */
@Command(
    name = "outbox-relay-cli",
    scope = ScopeType.INHERIT,
    mixinStandardHelpOptions = true,
    versionProvider = OutboxRelayCli.Version.class,
    description = "Operator tooling for the outbox-relay transactional outbox (PostgreSQL).",
    subcommands = {
      StatusCommand.class,
      ListCommand.class,
      InspectCommand.class,
      RequeueCommand.class,
      DiscardCommand.class,
      ParkCommand.class,
      PurgeCommand.class,
      MigrateCommand.class,
      SchemaSqlCommand.class,
      AdoptDebeziumTableCommand.class
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:done",
      "1:usage error: bad or missing options; nothing was changed (a few are found only once"
          + " connected: a purge cutoff in the future, a migrate --target older than the table, a"
          + " --column-message-id that gives one requested id to several rows)",
      "2:database or authentication error",
      "3:nothing matched where something was required",
      "4:internal error",
      "5:partly done: some of the message ids asked for were (or, dry run, would be) changed,"
          + " others not (each is printed with its reason); a purge left rows that another"
          + " session held locked",
      "6:done, but the output could not be written in full (stdout closed or full); what was"
          + " changed stays changed"
    })
public final class OutboxRelayCli implements Runnable {
  /** Held so the setting is not lost when the logger is collected. */
  private static final Logger DRIVER_LOG = Logger.getLogger("org.postgresql");

  private final Map<String, String> env;

  @Spec CommandSpec spec;

  OutboxRelayCli(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /** The environment the command was started with (for OUTBOX_* settings). */
  public Map<String, String> env() {
    return env;
  }

  @Override
  public void run() {
    throw new ParameterException(spec.commandLine(), "a command is required");
  }

  /**
   * Output in UTF-8 whatever the locale: under {@code LANG=C} (kubectl exec, cron, a minimal image)
   * Java 17 wrote every other character as '?', in JSON too, and an operator who copied {@code
   * ordre-?} from a list acted on another row that has that id.
   */
  public static void main(String[] args) {
    PrintWriter out = utf8(System.out);
    PrintWriter err = utf8(System.err);
    System.exit(run(args, System.getenv(), out, err));
  }

  /**
   * Over the PrintStream itself, so that {@link PrintWriter#checkError} still reads its errors:
   * over an OutputStreamWriter of its own, a full disk or a closed pipe went unseen (exit 0, not
   * 6).
   */
  private static PrintWriter utf8(java.io.PrintStream stream) {
    return new PrintWriter(stream, true, StandardCharsets.UTF_8);
  }

  /** Runs one command line; returns its exit code (see {@link ExitCode}). */
  public static int run(String[] args, Map<String, String> env, PrintWriter out, PrintWriter err) {
    // The driver's own log lines may quote hosts or server messages: the CLI speaks for itself.
    DRIVER_LOG.setLevel(Level.OFF);
    CommandLine cli = new CommandLine(new OutboxRelayCli(env));
    cli.setOut(out);
    cli.setErr(err);
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    // An @file's arguments would not be in args, where a usage error's values are hidden from.
    cli.setExpandAtFiles(false);
    cli.setParameterExceptionHandler(OutboxRelayCli::usageError);
    cli.setExecutionExceptionHandler(
        (e, commandLine, parseResult) ->
            failure(e, commandLine.getCommandName(), commandLine.getErr()));
    String undecoded = undecodedArgument(args);
    if (undecoded != null) {
      err.println(
          "error: "
              + undecoded
              + " holds U+FFFD, the character that stands for bytes the locale's charset could"
              + " not decode: run the CLI under a UTF-8 locale (LANG=C.UTF-8), or it would look"
              + " for a key or id other than the one typed");
      err.flush();
      return ExitCode.USAGE;
    }
    try {
      return outputWritten(cli.execute(args), out, err);
    } finally {
      out.flush();
      err.flush();
    }
  }

  /**
   * The option (or the argument's place) whose value holds U+FFFD, named without the value; null
   * when none does. The JVM decodes the command line in the locale's charset, and replaces what it
   * cannot decode (an é under LANG=C) with U+FFFD: such a key, id or role was never what was typed.
   */
  static String undecodedArgument(String[] args) {
    if ("UTF-8".equalsIgnoreCase(System.getProperty("sun.jnu.encoding", ""))) {
      return null; // under a UTF-8 locale a U+FFFD is one the user typed (an id may hold it)
    }
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.indexOf('\uFFFD') < 0) {
        continue;
      }
      int eq = arg.indexOf('=');
      if (eq > 0 && OPTION_LIKE.matcher(arg.substring(0, eq)).matches()) {
        return arg.substring(0, eq);
      }
      return "argument "
          + (i + 1)
          + (i > 0 && OPTION_LIKE.matcher(args[i - 1]).matches()
              ? " (after " + args[i - 1] + ")"
              : "");
    }
    return null;
  }

  /**
   * {@code code}, unless stdout failed: a PrintWriter (and System.out, the PrintStream under it)
   * swallows a write's IOException, so a closed pipe or a full disk would pass for success. A
   * command that failed otherwise keeps its own code; stderr says that the output is incomplete.
   */
  private static int outputWritten(int code, PrintWriter out, PrintWriter err) {
    if (!out.checkError()) { // flushes first
      return code;
    }
    err.println(
        "error: the output could not be written in full (stdout closed or full); what the"
            + " command changed stays changed");
    return code == ExitCode.OK ? ExitCode.OUTPUT : code;
  }

  private static int usageError(ParameterException e, String[] args) {
    CommandLine cli = e.getCommandLine();
    PrintWriter err = cli.getErr();
    err.println("error: " + describe(e, args));
    err.println(
        "Run '" + cli.getCommandSpec().qualifiedName() + " --help' for its options and examples.");
    return ExitCode.USAGE;
  }

  /**
   * A usage error, never echoing an argument's value: a mistyped {@code --pasword=secret} must not
   * print the secret, nor {@code --user --password=secret} (an empty {@code $USER} in a script),
   * which picocli reports as "Expected parameter for option '--user' but found
   * '--password=secret'".
   */
  private static String describe(ParameterException e, String[] args) {
    if (e instanceof UnmatchedArgumentException unmatched) {
      List<String> options = new ArrayList<>();
      int others = 0;
      for (String arg : unmatched.getUnmatched()) {
        int eq = arg.indexOf('=');
        String name = eq < 0 ? arg : arg.substring(0, eq);
        if (OPTION_LIKE.matcher(name).matches()) {
          options.add(name);
        } else {
          others++; // a value, or something like one (-Secr3t): not shown
        }
      }
      StringBuilder message = new StringBuilder();
      if (!options.isEmpty()) {
        message.append("unknown option ").append(Text.safe(String.join(", ", options)));
      }
      if (others > 0) {
        message
            .append(message.isEmpty() ? "" : "; ")
            .append(others)
            .append(" unexpected argument(s), not shown");
      }
      return message.toString();
    }
    String message = e.getMessage();
    CommandLine root = e.getCommandLine();
    while (root.getParent() != null) {
      root = root.getParent();
    }
    return Text.safe(
        withoutValues(
            message.startsWith("Error: ") ? message.substring(7) : message,
            args,
            optionNames(root)));
  }

  /**
   * What picocli may quote that is not a value: every option name of the command and its
   * subcommands ({@code --user}), each with its label as picocli writes a missing one ({@code
   * --instance-key=KEY}), and the labels of positional parameters ({@code MESSAGE_ID}).
   */
  private static Set<String> optionNames(CommandLine command) {
    Set<String> names = new HashSet<>();
    for (OptionSpec option : command.getCommandSpec().options()) {
      for (String name : option.names()) {
        names.add(name);
        names.add(name + "=" + option.paramLabel());
      }
    }
    command.getCommandSpec().positionalParameters().forEach(p -> names.add(p.paramLabel()));
    for (CommandLine sub : command.getSubcommands().values()) {
      names.addAll(optionNames(sub));
    }
    return names;
  }

  /** What a mistyped option looks like: {@code --pasword}, {@code -x}; anything else is a value. */
  private static final Pattern OPTION_LIKE = Pattern.compile("--[a-z][a-z0-9-]*|-[a-zA-Z]");

  /** A segment of picocli's message in quotes: an option, or a value the user typed. */
  private static final Pattern QUOTED = Pattern.compile("'([^']*)'");

  /**
   * {@code message} with everything picocli quoted that is not one of {@code options} replaced:
   * picocli quotes the values it rejects, and the argument it found where a value was expected. The
   * arguments themselves go first, longest first, since a value may hold a quote; then any other
   * quoted segment that is not an option, an option with its label ({@code '--instance-key=KEY'},
   * as picocli names a missing one) or a positional parameter's label. The CLI's own converters
   * never repeat a value.
   */
  static String withoutValues(String message, String[] args, Set<String> options) {
    List<String> typed = new ArrayList<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (!options.contains(eq < 0 ? arg : arg.substring(0, eq))) {
        typed.add(arg); // a value, or something that is no option of ours
      } else if (eq >= 0) {
        typed.add(arg); // --option=value, as picocli quotes a misplaced one
        typed.add(arg.substring(eq + 1));
      }
    }
    typed.sort(Comparator.comparingInt(String::length).reversed());
    String result = message;
    for (String value : typed) {
      if (!value.isEmpty()) {
        result = result.replace("'" + value + "'", "'" + NOT_SHOWN + "'");
      }
    }
    Matcher quoted = QUOTED.matcher(result);
    StringBuilder out = new StringBuilder();
    while (quoted.find()) {
      String content = quoted.group(1);
      boolean option = options.contains(content);
      String shown = option || content.equals(NOT_SHOWN) ? quoted.group() : "'" + NOT_SHOWN + "'";
      quoted.appendReplacement(out, Matcher.quoteReplacement(shown));
    }
    return quoted.appendTail(out).toString();
  }

  private static final String NOT_SHOWN = "(a value, not shown)";

  /** Reports a failure of {@code command} (the one that was run, never a step inside it). */
  private static int failure(Exception e, String command, PrintWriter err) {
    CliException cli =
        e instanceof CliException c
            ? c
            : e instanceof OutboxStoreException store
                ? CliException.database(command + " failed", store)
                : null;
    if (cli == null) {
      // Not the CLI's own words: the message may quote a driver or a connection string.
      err.println("error: internal error (" + e.getClass().getSimpleName() + ")");
      return ExitCode.INTERNAL;
    }
    err.println("error: " + cli.getMessage());
    return cli.exitCode();
  }

  /** The version from the jar's manifest. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = OutboxRelayCli.class.getPackage().getImplementationVersion();
      return new String[] {
        "outbox-relay-cli " + (version == null ? "(development build)" : version)
      };
    }
  }
}
