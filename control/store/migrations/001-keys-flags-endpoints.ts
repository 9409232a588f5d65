/** 1: keys and their secrets, flags, endpoints, changelog, audit log, state version. */
export default `
  CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
  ) STRICT;
  INSERT INTO meta (name, value) VALUES ('state_version', 1);

  CREATE TABLE keys (
    id             TEXT PRIMARY KEY,
    name           TEXT,
    prefix         TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at     INTEGER NOT NULL,
    created_by     TEXT NOT NULL,
    expires_at     INTEGER,
    revoked_at     INTEGER,
    wallet         TEXT,
    endpoints      TEXT NOT NULL DEFAULT '[]',
    limit_count    INTEGER,
    limit_window_s INTEGER,
    lift_count     INTEGER,
    lift_window_s  INTEGER,
    lift_until     INTEGER,
    application_id TEXT
  ) STRICT;

  -- One row per accepted secret; a rotation leaves the old one with an expiry (its grace).
  CREATE TABLE key_secrets (
    hash       TEXT PRIMARY KEY CHECK (length(hash) = 64),
    key_id     TEXT NOT NULL REFERENCES keys (id),
    prefix     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER
  ) STRICT;
  CREATE INDEX key_secrets_by_key ON key_secrets (key_id);

  CREATE TABLE flags (
    name       TEXT PRIMARY KEY,
    value      INTEGER NOT NULL CHECK (value IN (0, 1)),
    updated_at INTEGER NOT NULL,
    updated_by TEXT NOT NULL,
    note       TEXT
  ) STRICT;
  INSERT INTO flags (name, value, updated_at, updated_by) VALUES
    ('beta_gate_enabled', 0, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'bootstrap'),
    ('maintenance_mode',  0, CAST(unixepoch('subsec') * 1000 AS INTEGER), 'bootstrap');

  CREATE TABLE endpoints (
    id                  TEXT PRIMARY KEY,
    upstream            TEXT NOT NULL,
    methods             TEXT NOT NULL,
    timeout_ms          INTEGER NOT NULL CHECK (timeout_ms > 0),
    price               INTEGER NOT NULL CHECK (price >= 0),
    premium             INTEGER NOT NULL CHECK (premium >= 0),
    sla_ms              INTEGER NOT NULL CHECK (sla_ms > 0),
    refund_cap_per_hour INTEGER NOT NULL CHECK (refund_cap_per_hour >= 0),
    treasury_fee_bps    INTEGER NOT NULL CHECK (treasury_fee_bps BETWEEN 0 AND 10000),
    headers             TEXT NOT NULL DEFAULT '{}',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    removed_at          INTEGER
  ) STRICT;

  CREATE TABLE changelog (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('flag', 'notice')),
    text   TEXT NOT NULL,
    flag   TEXT,
    value  INTEGER,
    author TEXT NOT NULL
  ) STRICT;

  CREATE TABLE audit_log (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
  ) STRICT;
`;
