/** Calls admitted uncovered: SQLite's migration 24 (`../../migrations/024-uncovered-calls.ts`), which says what each column holds. */
export default `
  ALTER TABLE outcome_records ADD COLUMN uncovered BIGINT NOT NULL DEFAULT 0 CHECK (uncovered IN (0, 1));
  ALTER TABLE unsettled_outcomes ADD COLUMN uncovered BIGINT NOT NULL DEFAULT 0 CHECK (uncovered IN (0, 1));
  CREATE INDEX outcome_records_uncovered ON outcome_records (started_at) WHERE uncovered = 1;
`;
