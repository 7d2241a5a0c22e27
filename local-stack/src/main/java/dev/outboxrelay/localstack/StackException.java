package dev.outboxrelay.localstack;

/**
 * A failure the user can act on. Its message is printed as-is, without a stack trace, so it says
 * what went wrong and what to do about it.
 */
public final class StackException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StackException(String message) {
    super(message);
  }

  public StackException(String message, Throwable cause) {
    super(message, cause);
  }
}
