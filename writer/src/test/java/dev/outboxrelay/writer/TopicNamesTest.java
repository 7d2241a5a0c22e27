package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Kafka's rule for topic names, which the writer and the relay share. */
class TopicNamesTest {

  @Test
  void topicNamesFollowKafkasRule() {
    assertTrue(TopicNames.isLegal("a"));
    assertTrue(TopicNames.isLegal("Az09._-"));
    assertTrue(TopicNames.isLegal("a".repeat(249)));
    assertFalse(TopicNames.isLegal("a".repeat(250)));
    assertFalse(TopicNames.isLegal(null));
    assertFalse(TopicNames.isLegal(""));
    assertFalse(TopicNames.isLegal("."));
    assertFalse(TopicNames.isLegal(".."));
    assertFalse(TopicNames.isLegal("a b"));
    assertFalse(TopicNames.isLegal("a\n"));
  }

  @Test
  void namesThatDifferOnlyByDotsAndUnderscoresCollide() {
    assertTrue(TopicNames.collide("orders.eu", "orders_eu"));
    assertTrue(TopicNames.collide("a.b_c", "a_b.c"));
    assertTrue(TopicNames.collide("orders", "orders"));
    assertFalse(TopicNames.collide("orders.eu", "orders-eu"));
    assertFalse(TopicNames.collide("orders", null));
  }

  @Test
  void aRowMayNameAnyLegalTopicButKafkasInternalOnes() {
    for (String internal : TopicNames.INTERNAL) {
      assertTrue(TopicNames.isLegal(internal), internal);
      assertTrue(TopicNames.isInternal(internal), internal);
      assertFalse(TopicNames.isRoutable(internal), internal);
    }
    assertFalse(TopicNames.isRoutable("__consumer.offsets"), "collides with __consumer_offsets");
    assertFalse(TopicNames.isRoutable("__transaction.state"));
    // '.' and '_' alike in the leading pair too: each of these is __consumer_offsets to Kafka.
    for (String colliding :
        new String[] {"._consumer_offsets", "_.consumer_offsets", "..consumer.offsets"}) {
      assertFalse(TopicNames.isRoutable(colliding), colliding);
    }
    assertTrue(TopicNames.isRoutable("._my_topic"), "ordinary, like __my_topic");
    assertTrue(TopicNames.isRoutable("__my_topic"), "other names starting with __ are ordinary");
    assertTrue(TopicNames.isRoutable("orders.eu"));
    assertFalse(TopicNames.isRoutable("Orders/EU"));
    assertFalse(TopicNames.isRoutable(""));
    assertFalse(TopicNames.isRoutable(null));
  }
}
