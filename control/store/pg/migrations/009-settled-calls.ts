/**
 * 9: settlement stops rewriting outcome rows: SQLite's migration 19
 * (`../../migrations/019-settled-calls.ts`), which says what each table holds and why.
 * `outcomes` is renamed `outcome_records` and loses the settlement's columns (its indexes on
 * them go with them), the queue and `settled_calls` take the rows as they are, and `outcomes`
 * becomes the view of the two.
 *
 * Neither new table has a foreign key: on SQLite neither references the outcome records (its
 * migration says why), and the settled call's batch is left unchecked as the old column's was
 * (migration 2: PostgreSQL checks a foreign key with a trigger per inserted row). `ledger
 * verify` checks every reference instead (an outcome in exactly one of the queue and
 * `settled_calls`, with the same facts; a settled call's batch exists).
 * Dropped columns stay in old rows' storage until the table is rewritten; new rows store them
 * as NULLs, which cost a bit each.
 */
export default `
  CREATE TABLE unsettled_outcomes (
    endpoint_id TEXT COLLATE "C" NOT NULL,
    received_at BIGINT NOT NULL,
    call_id     TEXT COLLATE "C" NOT NULL,
    key_id      TEXT COLLATE "C",
    outcome     TEXT COLLATE "C" NOT NULL,
    started_at  BIGINT NOT NULL,
    PRIMARY KEY (endpoint_id, received_at, call_id)
  );

  INSERT INTO unsettled_outcomes (endpoint_id, received_at, call_id, key_id, outcome, started_at)
  SELECT endpoint_id, received_at, call_id, key_id, outcome, started_at FROM outcomes WHERE settled_batch IS NULL;

  CREATE TABLE settled_calls (
    call_id     TEXT COLLATE "C" PRIMARY KEY,
    batch_id    BIGINT NOT NULL,
    endpoint_id TEXT COLLATE "C" NOT NULL,
    key_id      TEXT COLLATE "C",
    outcome     TEXT COLLATE "C" NOT NULL,
    started_at  BIGINT NOT NULL,
    received_at BIGINT NOT NULL,
    premium     BIGINT NOT NULL,
    refund      BIGINT NOT NULL,
    refund_owed BIGINT NOT NULL,
    clamp       TEXT COLLATE "C" CHECK (clamp IN ('pool_depleted', 'cap_clamped'))
  );

  INSERT INTO settled_calls
    (call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp)
  SELECT call_id, settled_batch, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp
  FROM outcomes WHERE settled_batch IS NOT NULL;

  CREATE INDEX settled_calls_by_batch ON settled_calls (batch_id, received_at, call_id);
  CREATE INDEX settled_calls_clamped ON settled_calls (clamp) WHERE clamp IS NOT NULL;
  CREATE INDEX settled_calls_refunded ON settled_calls (started_at, call_id) WHERE refund_owed > 0;
  CREATE INDEX settled_calls_refunded_by_endpoint ON settled_calls (endpoint_id, started_at, call_id) WHERE refund_owed > 0;

  DROP INDEX outcomes_unsettled, outcomes_by_batch, outcomes_clamped, outcomes_refunded, outcomes_refunded_by_endpoint;
  ALTER TABLE outcomes DROP COLUMN settled_batch, DROP COLUMN premium, DROP COLUMN refund, DROP COLUMN refund_owed,
    DROP COLUMN clamp;
  ALTER TABLE outcomes RENAME TO outcome_records;
  ALTER INDEX outcomes_pkey RENAME TO outcome_records_pkey;
  ALTER INDEX outcomes_by_time RENAME TO outcome_records_by_time;
  ALTER INDEX outcomes_by_key RENAME TO outcome_records_by_key;
  ALTER TABLE outcome_records RENAME CONSTRAINT outcomes_outcome_check TO outcome_records_outcome_check;

  CREATE VIEW outcomes AS
    SELECT o.call_id, o.key_id, o.endpoint_id, o.method, o.status, o.outcome, o.latency_ms, o.started_at, o.gateway_id,
           o.received_at, s.batch_id AS settled_batch, s.premium, s.refund, s.refund_owed, s.clamp
    FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id;
`;
