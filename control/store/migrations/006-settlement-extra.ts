/**
 * 6: what settlement needs beyond migration 3.
 *
 * - `endpoints.response_schema`: the endpoint's JSON response schema (text), or NULL.
 * - `refund_hours`: refunds paid per endpoint per clock hour (UTC) of the calls' start, the
 *   running tally behind `refund_cap_per_hour`, kept in the same transaction as each batch.
 * - A payout's `reference` is unique, so recording the same external payment twice fails.
 * - Indexes for the few rows the pool view counts: transfers by kind, clamped outcomes.
 */
export default `
  ALTER TABLE endpoints ADD COLUMN response_schema TEXT;

  CREATE TABLE refund_hours (
    endpoint_id TEXT NOT NULL,
    hour        INTEGER NOT NULL,
    refunds     INTEGER NOT NULL CHECK (refunds >= 0),
    PRIMARY KEY (endpoint_id, hour)
  ) STRICT, WITHOUT ROWID;

  CREATE UNIQUE INDEX ledger_payout_reference ON ledger_transfers (reference) WHERE kind = 'payout';
  CREATE INDEX ledger_transfers_by_kind ON ledger_transfers (kind);
  CREATE INDEX outcomes_clamped ON outcomes (clamp) WHERE clamp IS NOT NULL;
`;
