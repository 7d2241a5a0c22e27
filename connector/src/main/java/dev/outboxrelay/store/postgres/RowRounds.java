package dev.outboxrelay.store.postgres;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.function.IntToLongFunction;

/**
 * Splits the entries of a publish or renewal batch into rounds in which each row appears once, each
 * round sorted by seq: the statements find a row's entry by binary search over distinct, sorted
 * seqs ({@link OutboxSql}). Within one row the highest lease token goes first: only the row's
 * current lease can match, and no lease handed out for it holds a higher token, so a batch takes
 * one round unless a lease in it was already lost.
 */
final class RowRounds {
  private RowRounds() {}

  /**
   * The rounds for entries {@code 0..n-1}, as entry indexes.
   *
   * @param seq the row an entry names
   * @param token the lease token it holds
   */
  static List<int[]> of(int n, IntToLongFunction seq, IntToLongFunction token) {
    Integer[] order = new Integer[n];
    Arrays.setAll(order, j -> j);
    Arrays.sort(
        order,
        Comparator.<Integer>comparingLong(seq::applyAsLong)
            .thenComparing(Comparator.<Integer>comparingLong(token::applyAsLong).reversed()));
    List<List<Integer>> rounds = new ArrayList<>();
    int round = 0;
    for (int k = 0; k < n; k++) {
      boolean sameRow = k > 0 && seq.applyAsLong(order[k]) == seq.applyAsLong(order[k - 1]);
      round = sameRow ? round + 1 : 0;
      if (round == rounds.size()) {
        rounds.add(new ArrayList<>());
      }
      rounds.get(round).add(order[k]);
    }
    List<int[]> result = new ArrayList<>(rounds.size());
    for (List<Integer> entries : rounds) {
      result.add(entries.stream().mapToInt(Integer::intValue).toArray());
    }
    return result;
  }
}
