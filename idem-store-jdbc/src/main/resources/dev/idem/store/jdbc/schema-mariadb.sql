-- Idem JDBC store, schema version 1, MariaDB 10.6+ (InnoDB).
-- Replace ${prefix} with the store's table prefix (default idem_) before running it by hand.
-- Times are epoch milliseconds written by the Idem instances (their clocks, not the database's).

CREATE TABLE IF NOT EXISTS ${prefix}schema_version (
  id SMALLINT NOT NULL PRIMARY KEY,
  version INT NOT NULL,
  CONSTRAINT ${prefix}schema_version_one CHECK (id = 1)
) ENGINE=InnoDB;

-- One row per (scope, key): state 1 = in flight, 2 = committed. deadline_ms is when the lease
-- (in flight) or the TTL (committed) runs out; 9223372036854775807 means never.
-- The expiry sweep deletes in deadline order (index keys_deadline).
CREATE TABLE IF NOT EXISTS ${prefix}keys (
  scope VARCHAR(129) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  dedup_key BINARY(32) NOT NULL,
  state SMALLINT NOT NULL,
  token BIGINT NOT NULL,
  since_ms BIGINT NOT NULL,
  deadline_ms BIGINT NOT NULL,
  fingerprint BINARY(32) NULL,
  result LONGBLOB NULL,
  PRIMARY KEY (scope, dedup_key),
  INDEX ${prefix}keys_deadline (deadline_ms),
  CONSTRAINT ${prefix}keys_state CHECK (state IN (1, 2))
) ENGINE=InnoDB;

-- Claims walk a queue oldest first (index outbox_queue).
CREATE TABLE IF NOT EXISTS ${prefix}outbox (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  queue VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  dedup_key BINARY(32) NOT NULL,
  payload LONGBLOB NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  enqueued_ms BIGINT NOT NULL,
  not_before_ms BIGINT NOT NULL,
  claimed_until_ms BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NULL,
  claimant VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  boot_id VARCHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
  ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  INDEX ${prefix}outbox_queue (queue, id)
) ENGINE=InnoDB;

-- Added after the first release: who claimed an entry (the store's instance id, null without one)
-- and in which run of it (a random id per opened store), so that a restarted instance can release
-- the claims of its previous life. Tables created before carry them after these statements.
ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS claimant VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS boot_id VARCHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL;

-- Added with ordered claims: the entry's ordering key (null: none). A claim hands out only the
-- oldest entry of each ordering key (index outbox_ordering finds it); outbox_keys has one row per
-- ordering key ever enqueued, locked by each enqueue of that key so that a key's entries get their
-- ids in commit order.
ALTER TABLE ${prefix}outbox ADD COLUMN IF NOT EXISTS ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
CREATE INDEX IF NOT EXISTS ${prefix}outbox_ordering ON ${prefix}outbox (queue, ordering_key, id);
CREATE TABLE IF NOT EXISTS ${prefix}outbox_keys (
  queue VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  PRIMARY KEY (queue, ordering_key)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS ${prefix}dead_letters (
  id BIGINT NOT NULL PRIMARY KEY,
  queue VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  dedup_key BINARY(32) NOT NULL,
  payload LONGBLOB NOT NULL,
  attempts INT NOT NULL,
  enqueued_ms BIGINT NOT NULL,
  dead_ms BIGINT NOT NULL,
  reason TEXT NOT NULL,
  ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  INDEX ${prefix}dead_letters_queue (queue, dead_ms)
) ENGINE=InnoDB;

-- Added so that a requeued dead letter goes back into its ordering key's mailbox: the ordering key
-- the entry had in the outbox (null: none). Tables created before carry it after this statement.
ALTER TABLE ${prefix}dead_letters ADD COLUMN IF NOT EXISTS ordering_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;

INSERT IGNORE INTO ${prefix}schema_version (id, version) VALUES (1, 1);
