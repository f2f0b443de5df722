package dev.idem.spi;

/**
 * What a store can do beyond the contract every store meets. The contract suite reads these flags
 * to decide which optional tests apply; it never copies tests per store.
 *
 * @param boundedKeys the store bounds keys per scope and evicts the least recently used ({@code
 *     maxKeys})
 * @param durable committed keys survive a restart of the process
 * @param nativeExpiry the store removes expired keys by itself; otherwise {@link
 *     DedupStore#sweepExpired(long)} does
 * @param outbox the store also implements {@link OutboxStore}
 */
public record StoreCapabilities(
    boolean boundedKeys, boolean durable, boolean nativeExpiry, boolean outbox) {}
