package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class TaskSuccessionTest {
  /** A connector name of this test alone: the lineages are shared by the whole JVM. */
  private final String connector = "succession-" + UUID.randomUUID();

  private TaskSuccession.Instance start(int index) {
    return TaskSuccession.started(new TaskIdentity(connector, index, 2));
  }

  @Test
  void anInstanceWaitingIsToldOnceTheNextInstanceOfItsTaskStarts() {
    AtomicInteger told = new AtomicInteger();
    TaskSuccession.Instance first = start(0);
    first.whenSucceeded(told::incrementAndGet);
    assertEquals(0, told.get(), "not by its own start");

    start(1); // another task of the connector
    assertEquals(0, told.get(), "not by another task's start");

    start(0);
    assertEquals(1, told.get());
    start(0);
    assertEquals(1, told.get(), "once");
  }

  /** The stop of an instance stuck until Connect cancelled it comes after its successor's start. */
  @Test
  void anInstanceThatAsksAfterItsSuccessorStartedIsToldAtOnce() {
    AtomicInteger told = new AtomicInteger();
    TaskSuccession.Instance first = start(0);
    TaskSuccession.Instance second = start(0);

    first.whenSucceeded(told::incrementAndGet);
    second.whenSucceeded(told::incrementAndGet);

    assertEquals(1, told.get(), "the first only");
  }

  @Test
  void anInstanceThatEndedIsNotTold() {
    AtomicInteger told = new AtomicInteger();
    TaskSuccession.Instance first = start(0);
    first.whenSucceeded(told::incrementAndGet);
    first.ended();

    start(0);

    assertEquals(0, told.get());
  }

  /** Its outcome loop died before the stop: nothing is kept for it (nor run for it later). */
  @Test
  void anInstanceThatEndedBeforeItAsksIsNeverTold() {
    AtomicInteger told = new AtomicInteger();
    TaskSuccession.Instance first = start(0);
    first.ended();
    first.whenSucceeded(told::incrementAndGet);

    start(0);

    assertEquals(0, told.get());
  }

  @Test
  void anotherConnectorsTaskOfTheSameIndexIsNoSuccessor() {
    AtomicInteger told = new AtomicInteger();
    start(0).whenSucceeded(told::incrementAndGet);

    TaskSuccession.started(new TaskIdentity(connector + "-other", 0, 1));

    assertEquals(0, told.get());
  }
}
