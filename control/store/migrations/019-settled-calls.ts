/**
 * 19: settlement stops rewriting outcome rows. An outcome is written once, when it is ingested,
 * and never changes; what settlement decides for a call is a row of its own.
 *
 * - `outcome_records`: the calls as the gateways shipped them (the columns `outcomes` had up to
 *   `received_at`), insert only.
 * - `unsettled_outcomes`: the settler's queue, one row per call not settled yet, keyed in
 *   settlement order per endpoint (endpoint_id, received_at, call_id) and carrying what the
 *   planner reads (key, outcome, start), so a batch reads its calls from the queue alone.
 *   Ingest adds a call's row in the statement that stores it; settlement deletes it in the
 *   batch's transaction.
 * - `settled_calls`: one row per settled call, written once by its batch: the batch, the call's
 *   premium, refund, refund owed and clamp, and the facts its readers need without a join
 *   (endpoint, key, outcome, start and receipt times: a batch's receipt leaves, the last
 *   refunds, the ledger's checks). `ledger verify` checks that those facts equal the outcome's
 *   and that every outcome is in exactly one of the queue and this table.
 * - `outcomes` becomes a view of the two: each outcome with its settlement, or NULLs while
 *   unsettled, exactly the columns the table had.
 *
 * Neither new table references `outcome_records` by a foreign key: both are written in the
 * transaction that writes or reads the outcome (ingest, a batch), and a foreign key check is a
 * lookup of the outcome per row (about 3 µs of ingest's 15–18 µs per outcome). `ledger verify`
 * checks instead that every queued and every settled call has its outcome record, with the
 * same facts. A settled call's batch keeps its foreign key, as `outcomes.settled_batch` had.
 *
 * Why: marking calls settled in place rewrote each call's whole row. On PostgreSQL that is a new
 * row version plus an entry in every index of the table (an update that changes an indexed
 * column cannot be a heap-only one), most of the settler's time; inserting a narrower row with
 * two indexes and deleting a queue entry is about a third of it. SQLite has the same tables so
 * both stores keep one schema and one set of checks.
 *
 * The existing rows are moved as they are: settled ones into `settled_calls`, the others into
 * the queue. A settled row without its amounts (which `ledger verify` reported) fails the
 * migration rather than being given zeros. The whole table is rewritten, in the migration's
 * transaction: 12.9 s for 1,200,000 outcomes (1,000,000 settled) on a 2-core VM.
 */
export default `
  CREATE TABLE outcome_records (
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
    received_at   INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;

  INSERT INTO outcome_records
    (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
  SELECT call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at
  FROM outcomes;

  CREATE TABLE unsettled_outcomes (
    endpoint_id TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    call_id     TEXT NOT NULL,
    key_id      TEXT,
    outcome     TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, received_at, call_id)
  ) STRICT, WITHOUT ROWID;

  INSERT INTO unsettled_outcomes (endpoint_id, received_at, call_id, key_id, outcome, started_at)
  SELECT endpoint_id, received_at, call_id, key_id, outcome, started_at FROM outcomes WHERE settled_batch IS NULL;

  CREATE TABLE settled_calls (
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
    clamp       TEXT CHECK (clamp IN ('pool_depleted', 'cap_clamped'))
  ) STRICT, WITHOUT ROWID;

  INSERT INTO settled_calls
    (call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp)
  SELECT call_id, settled_batch, endpoint_id, key_id, outcome, started_at, received_at,
         premium, refund, refund_owed, clamp
  FROM outcomes WHERE settled_batch IS NOT NULL;

  DROP TABLE outcomes;

  CREATE INDEX outcome_records_by_time ON outcome_records (started_at, call_id);
  CREATE INDEX outcome_records_by_key ON outcome_records (key_id, started_at, call_id) WHERE key_id IS NOT NULL;
  CREATE INDEX settled_calls_by_batch ON settled_calls (batch_id, received_at, call_id);
  CREATE INDEX settled_calls_clamped ON settled_calls (clamp) WHERE clamp IS NOT NULL;
  CREATE INDEX settled_calls_refunded ON settled_calls (started_at, call_id) WHERE refund_owed > 0;
  CREATE INDEX settled_calls_refunded_by_endpoint ON settled_calls (endpoint_id, started_at, call_id) WHERE refund_owed > 0;

  CREATE VIEW outcomes AS
    SELECT o.call_id, o.key_id, o.endpoint_id, o.method, o.status, o.outcome, o.latency_ms, o.started_at, o.gateway_id,
           o.received_at, s.batch_id AS settled_batch, s.premium, s.refund, s.refund_owed, s.clamp
    FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id;
`;
