/**
 * 24: calls admitted uncovered (docs/money.md, "Pause").
 *
 * - `outcome_records.uncovered`: 1 when the gateway admitted the call uncovered (the pool was
 *   paused, by an operator or because its free capital fell below `pool.minFree`, or the
 *   gateway's share of free capital was spent): it settles with premium 0 and refund 0. 0 for
 *   every other call, and for every call recorded before this migration.
 * - `unsettled_outcomes.uncovered` repeats it in the settler's queue, where the pool's exposure
 *   counts only covered failures and the settler plans the call.
 * - `outcome_records_uncovered`: the uncovered calls alone, which the public pages count.
 */
export default `
  ALTER TABLE outcome_records ADD COLUMN uncovered INTEGER NOT NULL DEFAULT 0 CHECK (uncovered IN (0, 1));
  ALTER TABLE unsettled_outcomes ADD COLUMN uncovered INTEGER NOT NULL DEFAULT 0 CHECK (uncovered IN (0, 1));
  CREATE INDEX outcome_records_uncovered ON outcome_records (started_at) WHERE uncovered = 1;
`;
