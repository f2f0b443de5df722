/**
 * A {@link dev.idem.spi.DedupStore} and {@link dev.idem.spi.OutboxStore} over JDBC: one table of
 * keys per store, reserve as one atomic statement (PostgreSQL) or one short row-locked transaction
 * (MariaDB, H2), commit and release as one conditional statement, and an outbox appended in the
 * same transaction as the commit. Start with {@link dev.idem.store.jdbc.JdbcDedupStore#builder}.
 */
@NullMarked
package dev.idem.store.jdbc;

import org.jspecify.annotations.NullMarked;
