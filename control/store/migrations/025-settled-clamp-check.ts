/**
 * 25: `settled_calls.clamp`'s CHECK tests NULL first (SQLite only; PostgreSQL's is unchanged).
 *
 * Migration 23 widened the CHECK to four values, `clamp IN ('pool_depleted', 'cap_clamped',
 * 'call_capped', 'batch_capped')`. SQLite turns an IN list of two values into two comparisons,
 * but evaluates a longer one against a lookup table it builds for the row, and it does so for
 * every row it inserts, NULL included. Nearly every settled call has no clamp, so the settler's
 * one INSERT of a batch's standard calls paid about a quarter more for it, and settlement as a
 * whole about a seventh (bench/README.md, "What a CHECK constraint cost SQLite settlement"). Written `clamp IS NULL OR clamp IN (…)`,
 * an unclamped row is accepted on its first test, and the same values are allowed as before.
 *
 * SQLite cannot alter a CHECK: `settled_calls` is rebuilt with its rows, its indexes and the
 * `outcomes` view over it, exactly as migration 23 left them but for this one constraint.
 */
export default `
  DROP VIEW outcomes;
  CREATE TABLE settled_calls_new (
    call_id     TEXT PRIMARY KEY,
    batch_id    INTEGER NOT NULL REFERENCES settlement_batches (id),
    endpoint_id TEXT NOT NULL,
    key_id      TEXT,
    outcome     TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    premium     INTEGER NOT NULL,
    refund      INTEGER NOT NULL,
    refund_owed INTEGER NOT NULL,
    clamp       TEXT CHECK (clamp IS NULL OR clamp IN ('pool_depleted', 'cap_clamped', 'call_capped', 'batch_capped'))
  ) STRICT, WITHOUT ROWID;
  INSERT INTO settled_calls_new SELECT call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at,
    premium, refund, refund_owed, clamp FROM settled_calls;
  DROP TABLE settled_calls;
  ALTER TABLE settled_calls_new RENAME TO settled_calls;
  CREATE INDEX settled_calls_by_batch ON settled_calls (batch_id, received_at, call_id);
  CREATE INDEX settled_calls_clamped ON settled_calls (clamp) WHERE clamp IS NOT NULL;
  CREATE INDEX settled_calls_refunded ON settled_calls (started_at, call_id) WHERE refund_owed > 0;
  CREATE INDEX settled_calls_refunded_by_endpoint ON settled_calls (endpoint_id, started_at, call_id) WHERE refund_owed > 0;
  CREATE VIEW outcomes AS
    SELECT o.call_id, o.key_id, o.endpoint_id, o.method, o.status, o.outcome, o.latency_ms, o.started_at, o.gateway_id,
           o.received_at, s.batch_id AS settled_batch, s.premium, s.refund, s.refund_owed, s.clamp
    FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id;
`;
