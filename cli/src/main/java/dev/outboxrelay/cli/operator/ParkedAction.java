package dev.outboxrelay.cli.operator;

/** What an operator does to parked (FAILED or EXHAUSTED) rows. */
public enum ParkedAction {
  /** Back to PENDING, due now, with a fresh attempt budget and a bumped lease token. */
  REQUEUE("requeue", "requeued", "requeuing"),
  /** Deleted: the rows are never relayed (a dead-lettered row's copy stays in its topic). */
  DISCARD("discard", "discarded", "discarding");

  private final String verb;
  private final String pastTense;
  private final String gerund;

  ParkedAction(String verb, String pastTense, String gerund) {
    this.verb = verb;
    this.pastTense = pastTense;
    this.gerund = gerund;
  }

  /** The command's name, as in "requeue failed". */
  public String verb() {
    return verb;
  }

  /** As in "3 row(s) requeued". */
  public String pastTense() {
    return pastTense;
  }

  /** As in "failed after requeuing 3 row(s)". */
  public String gerund() {
    return gerund;
  }
}
