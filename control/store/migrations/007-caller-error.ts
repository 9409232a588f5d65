/**
 * 7: the `caller_error` outcome: a call that failed by the caller's doing (it left before the
 * answer, streamed a body over the limit, or stalled mid-body). Nothing moves for it and it
 * is outside the failure-rate denominator, like `client_error`.
 *
 * SQLite cannot change a CHECK constraint in place, so `outcomes` is rebuilt with the wider
 * one (same columns in the same order, same indexes), and the rollups gain a column.
 */
export default `
  CREATE TABLE outcomes_v7 (
    call_id       TEXT PRIMARY KEY,
    key_id        TEXT,
    endpoint_id   TEXT NOT NULL,
    method        TEXT NOT NULL,
    status        INTEGER NOT NULL,
    outcome       TEXT NOT NULL CHECK (outcome IN
                    ('ok', 'latency_breach', 'server_error', 'network_error', 'schema_mismatch', 'client_error', 'caller_error')),
    latency_ms    INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    gateway_id    TEXT NOT NULL,
    received_at   INTEGER NOT NULL,
    settled_batch INTEGER REFERENCES settlement_batches (id),
    premium       INTEGER,
    refund        INTEGER,
    refund_owed   INTEGER,
    clamp         TEXT CHECK (clamp IN ('pool_depleted', 'cap_clamped'))
  ) STRICT, WITHOUT ROWID;

  INSERT INTO outcomes_v7
    (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at,
     settled_batch, premium, refund, refund_owed, clamp)
  SELECT call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at,
         settled_batch, premium, refund, refund_owed, clamp
  FROM outcomes;

  DROP TABLE outcomes;
  ALTER TABLE outcomes_v7 RENAME TO outcomes;

  CREATE INDEX outcomes_by_endpoint_time ON outcomes (endpoint_id, started_at);
  CREATE INDEX outcomes_unsettled ON outcomes (endpoint_id, received_at, call_id) WHERE settled_batch IS NULL;
  CREATE INDEX outcomes_by_batch ON outcomes (settled_batch) WHERE settled_batch IS NOT NULL;
  CREATE INDEX outcomes_by_time ON outcomes (started_at, call_id);
  CREATE INDEX outcomes_clamped ON outcomes (clamp) WHERE clamp IS NOT NULL;

  ALTER TABLE outcome_rollups ADD COLUMN caller_error INTEGER NOT NULL DEFAULT 0;
`;
