-- Idem JDBC store, schema version 1, MariaDB 10.6+ (InnoDB), layout partitioned: the keys tables.
-- They replace the standard layout's ${prefix}keys table; the outbox, dead letter and schema
-- version tables are those of schema-mariadb.sql.

-- In-flight keys only (a reserve inserts, the commit or a release deletes): a small table.
-- The sweep deletes expired leases in deadline order.
CREATE TABLE IF NOT EXISTS ${prefix}keys_inflight (
  scope VARCHAR(129) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  dedup_key BINARY(32) NOT NULL,
  token BIGINT NOT NULL,
  since_ms BIGINT NOT NULL,
  deadline_ms BIGINT NOT NULL,
  fingerprint BINARY(32) NULL,
  PRIMARY KEY (scope, dedup_key),
  INDEX ${prefix}keys_inflight_deadline (deadline_ms)
) ENGINE=InnoDB;

-- Committed keys, written once by the commit, partitioned by expiry_day, the UTC epoch day of
-- their deadline (-2147483648 for never: partition pnever). The store adds day partitions
-- d<epoch day> after the last one as commits need them (a day partition holds every day after the
-- one before it) and drops each once its day is over. MariaDB wants the partitioning column in
-- every unique key, so the primary key is (scope, dedup_key, expiry_day); the store keeps at most
-- one live row per (scope, dedup_key) and finds it by probing every partition's primary key.
CREATE TABLE IF NOT EXISTS ${prefix}keys (
  scope VARCHAR(129) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  dedup_key BINARY(32) NOT NULL,
  expiry_day INT NOT NULL,
  token BIGINT NOT NULL,
  since_ms BIGINT NOT NULL,
  deadline_ms BIGINT NOT NULL,
  fingerprint BINARY(32) NULL,
  result LONGBLOB NULL,
  PRIMARY KEY (scope, dedup_key, expiry_day)
) ENGINE=InnoDB
PARTITION BY RANGE (expiry_day) (PARTITION pnever VALUES LESS THAN (-2147483647));

-- How far sweeps have got: a key whose deadline is at or before it counts as removed.
CREATE TABLE IF NOT EXISTS ${prefix}keys_swept (
  id SMALLINT NOT NULL PRIMARY KEY,
  until_ms BIGINT NOT NULL,
  CONSTRAINT ${prefix}keys_swept_one CHECK (id = 1)
) ENGINE=InnoDB;

INSERT IGNORE INTO ${prefix}keys_swept (id, until_ms) VALUES (1, -9223372036854775808);
