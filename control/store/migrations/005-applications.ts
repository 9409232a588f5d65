/**
 * 5: access applications and the log of key deliveries.
 *
 * `content_hash` is the SHA-256 of the normalised answers (control/applications/normalise.ts):
 * a submission whose hash matches an application received within the duplicate window is
 * the same application (its `submissions` count grows), not a second row.
 *
 * The delivery log has one row per attempt. It names the key by id; the key itself is only
 * ever in the delivered message, never in this database.
 */
export default `
  CREATE TABLE applications (
    id                TEXT PRIMARY KEY,
    received_at       INTEGER NOT NULL,
    source            TEXT NOT NULL CHECK (source IN ('form', 'api', 'direct')),
    status            TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    building          TEXT NOT NULL,
    contact_name      TEXT NOT NULL,
    wallet            TEXT,
    social_url        TEXT NOT NULL,
    messaging_handle  TEXT NOT NULL,
    applicant_type    TEXT NOT NULL CHECK (applicant_type IN ('ai_agent', 'api_merchant', 'ai_agent_merchant')),
    apis_paid         TEXT NOT NULL DEFAULT '[]',
    why               TEXT,
    feedback_opt_in   INTEGER NOT NULL CHECK (feedback_opt_in IN (0, 1)),
    content_hash      TEXT NOT NULL CHECK (length(content_hash) = 64),
    submissions       INTEGER NOT NULL DEFAULT 1 CHECK (submissions >= 1),
    last_submitted_at INTEGER NOT NULL,
    recorded_by       TEXT,
    decided_at        INTEGER,
    decided_by        TEXT,
    reject_reason     TEXT,
    key_id            TEXT REFERENCES keys (id),
    delivery_status   TEXT CHECK (delivery_status IN ('shown_to_operator', 'delivered', 'failed')),
    delivery_notifier TEXT CHECK (delivery_notifier IN ('operator', 'webhook')),
    delivery_at       INTEGER,
    delivery_error    TEXT,
    CHECK ((status = 'approved') = (key_id IS NOT NULL))
  ) STRICT;
  CREATE INDEX applications_by_hash ON applications (content_hash, received_at);
  CREATE INDEX applications_by_status ON applications (status, received_at);

  CREATE TABLE application_deliveries (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    application_id TEXT NOT NULL REFERENCES applications (id),
    key_id         TEXT NOT NULL REFERENCES keys (id),
    notifier       TEXT NOT NULL CHECK (notifier IN ('operator', 'webhook')),
    attempt        INTEGER NOT NULL CHECK (attempt >= 1),
    at             INTEGER NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('shown_to_operator', 'delivered', 'retrying', 'failed')),
    http_status    INTEGER,
    error          TEXT,
    target         TEXT
  ) STRICT;
  CREATE INDEX application_deliveries_by_application ON application_deliveries (application_id, id);
`;
