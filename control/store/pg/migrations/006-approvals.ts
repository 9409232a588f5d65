/**
 * Requests for a money action waiting for a second operator: SQLite's migration 17
 * (`../../migrations/017-approvals.ts`), which says what each column holds.
 */
export default `
  CREATE TABLE approvals (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    action             TEXT COLLATE "C" NOT NULL,
    target             TEXT COLLATE "C",
    detail             TEXT COLLATE "C" NOT NULL,
    requested_by       TEXT COLLATE "C" NOT NULL,
    requested_token_id TEXT COLLATE "C",
    requested_at       BIGINT NOT NULL,
    expires_at         BIGINT NOT NULL,
    status             TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by         TEXT COLLATE "C",
    decided_at         BIGINT,
    reason             TEXT COLLATE "C"
  );
  CREATE INDEX approvals_by_time ON approvals (requested_at);
`;
