package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LeaseOwnersTest {
  @Test
  void everyOwnerOfAConnectorBeginsAsItsOwnersDo() {
    String owner = LeaseOwners.newOwner("orders", "3");
    assertEquals("orders/task-", LeaseOwners.connectorOwners(owner));
    assertTrue(LeaseOwners.newOwner("orders", "12").startsWith("orders/task-"));
    assertNotEquals(owner, LeaseOwners.newOwner("orders", "3"), "unique per start");
    assertTrue(owner.matches("orders/task-3/[0-9a-f]{16}"), "64 random bits: " + owner);
  }

  @Test
  void aConnectorNameHoldingTheTaskMarkerKeepsItsWholeName() {
    String owner = LeaseOwners.newOwner("a/task-b", "0");
    assertEquals("a/task-b/task-", LeaseOwners.connectorOwners(owner));
    assertFalse(
        LeaseOwners.newOwner("a", "0").startsWith(LeaseOwners.connectorOwners(owner)),
        "connector a is another connector");
  }

  @Test
  void anOwnerNotMadeHereCountsEveryOwnerAsItsConnectors() {
    assertEquals("", LeaseOwners.connectorOwners("task-under-test"));
  }
}
