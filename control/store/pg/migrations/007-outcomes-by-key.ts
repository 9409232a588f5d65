/**
 * One key's calls by start time, for the agent's own account: SQLite's migration 18
 * (`../../migrations/018-outcomes-by-key.ts`), which says what it serves.
 */
export default `
  CREATE INDEX outcomes_by_key ON outcomes (key_id, started_at, call_id) WHERE key_id IS NOT NULL;
`;
