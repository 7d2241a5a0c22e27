package dev.outboxrelay.cli;

/** The CLI's exit codes; scripts branch on them, so they never change meaning. */
public final class ExitCode {
  /** The command did what was asked. */
  public static final int OK = 0;

  /**
   * Bad options or arguments: nothing was changed. Most are found before connecting; a few only
   * once connected (a purge cutoff in the future by the database clock, a migrate target older than
   * the table), after reads but before any change, or by the change itself, then rolled back (a
   * --column-message-id that gives one requested id to several rows).
   */
  public static final int USAGE = 1;

  /** The database was unreachable, refused the credentials or failed the statement. */
  public static final int DATABASE = 2;

  /** Nothing matched where something was required (inspect, requeue, discard, park). */
  public static final int NOTHING_MATCHED = 3;

  /**
   * Some of the message ids asked for were changed and others were not (requeue, discard, park):
   * what was changed stays changed, and each id left alone is printed with its reason. A purge that
   * left rows before its cutoff which another session held locked.
   */
  public static final int PARTIAL = 5;

  /** A bug in the CLI: nothing more is printed, since the failure may carry driver text. */
  public static final int INTERNAL = 4;

  /**
   * The command did what was asked, but its output could not be written in full (stdout closed, as
   * a pipe whose reader quit, or on a full disk): what it changed stays changed, and what it
   * printed is incomplete. A command that failed otherwise keeps its own code.
   */
  public static final int OUTPUT = 6;

  private ExitCode() {}
}
