/**
 * 2: what each state version changed (for deltas), gateways and their applied versions, call
 * outcomes shipped by gateways (idempotent by call id).
 */
export default `
  CREATE TABLE state_changes (
    version INTEGER NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('key', 'endpoint', 'flags', 'limits')),
    entity  TEXT NOT NULL,
    PRIMARY KEY (version, kind, entity)
  ) STRICT, WITHOUT ROWID;

  CREATE TABLE gateways (
    id                TEXT PRIMARY KEY,
    applied_version   INTEGER NOT NULL DEFAULT 0,
    applied_sha256    TEXT,
    first_seen        INTEGER NOT NULL,
    last_seen         INTEGER NOT NULL,
    last_nack_version INTEGER,
    last_nack_reason  TEXT,
    last_nack_at      INTEGER
  ) STRICT;

  CREATE TABLE outcomes (
    call_id     TEXT PRIMARY KEY,
    key_id      TEXT,
    endpoint_id TEXT NOT NULL,
    method      TEXT NOT NULL,
    status      INTEGER NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN
                  ('ok', 'latency_breach', 'server_error', 'network_error', 'schema_mismatch', 'client_error')),
    latency_ms  INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    gateway_id  TEXT NOT NULL,
    received_at INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX outcomes_by_endpoint_time ON outcomes (endpoint_id, started_at);
  `;
