package dev.outboxrelay.store;

/**
 * One page of an exactly-once recovery or sweep ({@link OutboxStore#recover}).
 *
 * @param settled what it did to the rows of the page
 * @param lastSeq the seq of the last row it read, where the next page starts; the page's own {@code
 *     afterSeq} when it read none
 * @param full whether it read as many rows as it was allowed, so that more may follow
 */
public record RecoveryPage(Recovery settled, long lastSeq, boolean full) {}
