/**
 * 17: requests for a money action waiting for a second operator (`money.approvals: 2`).
 *
 * One row per request: the action (`pool.fund`, `payouts.mark_paid`, `receipts.rotate_key`), what
 * it acts on, the request as asked (JSON), who asked with which token, when it expires, and, once
 * decided, its status, who decided and when (and the reason of a rejection). `status` stays
 * `pending` past `expires_at`: an expired request is a pending one whose time is up, and no
 * statement decides it then. The action's own audit row names both operators.
 */
export default `
  CREATE TABLE approvals (
    id                 TEXT PRIMARY KEY,
    action             TEXT NOT NULL,
    target             TEXT,
    detail             TEXT NOT NULL,
    requested_by       TEXT NOT NULL,
    requested_token_id TEXT,
    requested_at       INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by         TEXT,
    decided_at         INTEGER,
    reason             TEXT
  ) STRICT;
  CREATE INDEX approvals_by_time ON approvals (requested_at);
`;
