package dev.outboxrelay.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The release of a claim whose result never arrived reads the backlog one page per statement, so
 * that a backlog of any size is read in statements of one page each: across pages and instance
 * keys, ending early once a claim's worth of rows is found, and reading on from where a failure or
 * a stop left it.
 */
class LostClaimReleaseTest {
  private static final String OWNER = RuntimeFixture.OWNER;

  private final RuntimeFixture f =
      new RuntimeFixture(Map.of("instance.keys", "eu,us", "ordering.enabled", "false"));

  /** Each page's instance key and the seq it read after, in call order. */
  private final List<String> pages = new ArrayList<>();

  /** Each wait for the lost claim to end: its owner and the pages read before it. */
  private final List<String> barriers = new ArrayList<>();

  /** The lost claim is still ending on the server when next asked (its commit waits). */
  private boolean claimStillEnding;

  /** The number of the page (counted from 1) that fails once, as in an outage; 0 for none. */
  private int failingPage;

  private final OutboxStore store =
      (OutboxStore)
          Proxy.newProxyInstance(
              OutboxStore.class.getClassLoader(),
              new Class<?>[] {OutboxStore.class},
              (proxy, method, args) -> {
                if (method.getName().equals("claimsEnded")) {
                  barriers.add(args[0] + " after " + pages.size() + " pages");
                  if (claimStillEnding) {
                    claimStillEnding = false;
                    return false;
                  }
                }
                if (method.getName().equals("releaseUnheld")) {
                  pages.add(args[0] + ">" + seqName((long) args[4]));
                  if (pages.size() == failingPage) {
                    failingPage = 0;
                    throw new OutboxStoreException(
                        OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "release");
                  }
                }
                return method.invoke(f.store, args);
              });

  private final List<Long> held = new ArrayList<>();

  /**
   * eu: m0 held by the task, m1 and m2 another owner's, m3 (lost) and m4 due; us: u0 (lost), u1 and
   * u2 due.
   */
  @BeforeEach
  void backlog() {
    for (int i = 0; i < 5; i++) {
      f.add("eu", "m" + i, "a" + i);
    }
    for (int i = 0; i < 3; i++) {
      f.add("us", "u" + i, "b" + i);
    }
    held.add(claim(OWNER, "eu", 1).get(0).seq());
    claim("other", "eu", 2);
    claim(OWNER, "eu", 1);
    claim(OWNER, "us", 1);
  }

  /**
   * No page is read before the lost claim has ended on the server (it may still be committing, its
   * rows invisible): a run that finds it still ending ends unfinished, and the next asks again.
   */
  @Test
  void readsNoPageBeforeTheLostClaimHasEnded() {
    claimStillEnding = true;
    LostClaimRelease release = new LostClaimRelease(Set.of("us", "eu"), OWNER, 10, 2);
    assertFalse(release.run(store, () -> held, 0, () -> false));
    assertEquals(List.of(), pages, "a page read before the claim ended");
    assertFalse(release.claimEnded());

    assertTrue(release.run(store, () -> held, 0, () -> false));
    assertEquals(List.of(OWNER + " after 0 pages", OWNER + " after 0 pages"), barriers);
    assertEquals(List.of("m3", "u0"), release.released().stream().sorted().toList());
  }

  @Test
  void findsTheRowsOfALostClaimAcrossPagesAndInstanceKeys() {
    LostClaimRelease release = new LostClaimRelease(Set.of("us", "eu"), OWNER, 10, 2);

    assertTrue(release.run(store, () -> held, 0, () -> false));

    assertEquals(List.of("m3", "u0"), release.released());
    assertEquals(
        List.of("eu>start", "eu>m1", "eu>m3", "us>start", "us>u1"),
        pages,
        "each key from its start, page after page, until a page is not full");
    assertEquals(5, release.pagesRead());
    assertEquals(MessageStatus.PENDING, f.store.find("m3").orElseThrow().status());
    assertNull(f.store.find("u0").orElseThrow().leaseOwner());
    assertEquals(OWNER, f.store.find("m0").orElseThrow().leaseOwner(), "held: kept");
    assertEquals("other", f.store.find("m1").orElseThrow().leaseOwner());
  }

  @Test
  void endsOnceItReleasedAsManyRowsAsAClaimMayLease() {
    LostClaimRelease release = new LostClaimRelease(Set.of("eu", "us"), OWNER, 1, 2);

    assertTrue(release.run(store, () -> held, 0, () -> false));

    assertEquals(List.of("m3"), release.released());
    assertEquals(List.of("eu>start", "eu>m1"), pages, "no page read after the claim's worth");
  }

  @Test
  void aFailedPageIsReadAgainAndThePagesBeforeItAreNot() {
    LostClaimRelease release = new LostClaimRelease(Set.of("eu", "us"), OWNER, 10, 2);
    failingPage = 2; // the database away

    assertThrows(OutboxStoreException.class, () -> release.run(store, () -> held, 0, () -> false));
    assertEquals(List.of(), release.released());
    assertTrue(release.run(store, () -> held, 0, () -> false));

    assertEquals(List.of("m3", "u0"), release.released());
    assertEquals(
        List.of("eu>start", "eu>m1", "eu>m1", "eu>m3", "us>start", "us>u1"),
        pages,
        "the failed page again, not the one before it");
  }

  @Test
  void aStopEndsTheReadingAndTheNextRunGoesOnFromThere() {
    LostClaimRelease release = new LostClaimRelease(Set.of("eu", "us"), OWNER, 10, 2);

    assertFalse(release.run(store, () -> held, 0, () -> release.pagesRead() == 2));
    assertEquals(List.of("eu>start", "eu>m1"), pages);
    assertEquals(List.of("m3"), release.released(), "what it found is released");

    assertTrue(release.run(store, () -> held, 0, () -> false));
    assertEquals(List.of("eu>start", "eu>m1", "eu>m3", "us>start", "us>u1"), pages);
    assertEquals(List.of("m3", "u0"), release.released());
  }

  private List<ClaimedMessage> claim(String owner, String key, int limit) {
    return f.store
        .claim(new ClaimRequest(owner, Set.of(key), limit, Duration.ofMinutes(1), 3, false))
        .claimed();
  }

  /** A seq by the message id of its row, or "start". */
  private String seqName(long seq) {
    if (seq == Long.MIN_VALUE) {
      return "start";
    }
    for (String id : List.of("m0", "m1", "m2", "m3", "m4", "u0", "u1", "u2")) {
      if (f.store.find(id).orElseThrow().seq() == seq) {
        return id;
      }
    }
    return String.valueOf(seq);
  }
}
