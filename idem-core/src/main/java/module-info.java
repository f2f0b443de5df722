/** Idem core: keys, the dedup engine, the store SPI, the in-memory store and local ordering. */
module dev.idem.core {
  requires transitive org.jspecify;

  exports dev.idem;
  exports dev.idem.spi;
  exports dev.idem.key;
  exports dev.idem.ordering;
  exports dev.idem.store.memory;
  // Shared with Idem's own modules only; not API.
  exports dev.idem.internal;
}
