-- Idem JDBC store, schema version 1, PostgreSQL 11+, layout partitioned: the keys tables.
-- They replace the standard layout's ${prefix}keys table and its index; the outbox, dead letter
-- and schema version tables are those of schema-postgresql.sql.

-- In-flight keys only (a reserve inserts, the commit or a release deletes): a small table.
CREATE TABLE IF NOT EXISTS ${prefix}keys_inflight (
  scope varchar(129) NOT NULL,
  dedup_key bytea NOT NULL CHECK (octet_length(dedup_key) = 32),
  token bigint NOT NULL,
  since_ms bigint NOT NULL,
  deadline_ms bigint NOT NULL,
  fingerprint bytea NULL CHECK (octet_length(fingerprint) = 32),
  PRIMARY KEY (scope, dedup_key)
);

-- The sweep deletes expired leases in deadline order.
CREATE INDEX IF NOT EXISTS ${prefix}keys_inflight_deadline ON ${prefix}keys_inflight (deadline_ms);

-- Committed keys, written once by the commit, partitioned by the UTC day of their deadline
-- (${prefix}keys_d<epoch day>, created by the store as needed and dropped once the day is over).
-- No unique constraint: the store keeps at most one live row per (scope, dedup_key).
CREATE TABLE IF NOT EXISTS ${prefix}keys (
  token bigint NOT NULL,
  since_ms bigint NOT NULL,
  deadline_ms bigint NOT NULL,
  scope varchar(129) NOT NULL,
  dedup_key bytea NOT NULL CHECK (octet_length(dedup_key) = 32),
  fingerprint bytea NULL CHECK (octet_length(fingerprint) = 32),
  result bytea NULL
) PARTITION BY RANGE (deadline_ms);

-- Lookups by key: a hash index stores a 4-byte hash per row instead of the key.
CREATE INDEX IF NOT EXISTS ${prefix}keys_key ON ${prefix}keys USING hash (dedup_key);

-- Keys without a TTL (9223372036854775807) and deadlines from the year 10000 on.
CREATE TABLE IF NOT EXISTS ${prefix}keys_never PARTITION OF ${prefix}keys
  FOR VALUES FROM (253402300800000) TO (MAXVALUE);

-- How far sweeps have got: a key whose deadline is at or before it counts as removed.
CREATE TABLE IF NOT EXISTS ${prefix}keys_swept (
  id smallint PRIMARY KEY CHECK (id = 1),
  until_ms bigint NOT NULL
);

INSERT INTO ${prefix}keys_swept (id, until_ms) VALUES (1, -9223372036854775808) ON CONFLICT (id) DO NOTHING;
