package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class RowRoundsTest {
  @Test
  void distinctRowsGoInOneRoundSortedBySeq() {
    long[] seqs = {30, 10, 20};
    List<int[]> rounds = RowRounds.of(3, j -> seqs[j], j -> 1);
    assertEquals(1, rounds.size());
    assertArrayEquals(new int[] {1, 2, 0}, rounds.get(0));
  }

  @Test
  void aRowNamedTwiceGoesInTwoRoundsItsHighestTokenFirst() {
    long[] seqs = {20, 10, 20, 20};
    long[] tokens = {3, 1, 5, 4};
    List<int[]> rounds = RowRounds.of(4, j -> seqs[j], j -> tokens[j]);
    assertEquals(3, rounds.size());
    assertArrayEquals(new int[] {1, 2}, rounds.get(0));
    assertArrayEquals(new int[] {3}, rounds.get(1));
    assertArrayEquals(new int[] {0}, rounds.get(2));
  }

  @Test
  void noEntriesNoRound() {
    assertEquals(0, RowRounds.of(0, j -> 0, j -> 0).size());
  }
}
