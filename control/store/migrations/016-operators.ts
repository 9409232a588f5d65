/**
 * 16: operators, their tokens, and an audit log that names the token.
 *
 * - `operators`: one row per operator (name, its scopes as a JSON array, when it was made,
 *   expires and was revoked, when one of its tokens last opened the admin API, kept to the
 *   minute). `root`, the bootstrap admin token's operator, is seeded with the scope `*` (every
 *   scope, whatever scopes later builds add): its row holds its revocation and last use, never
 *   its token, which is the data dir's `admin.token`.
 * - `operator_tokens`: each operator token's id (`opt_…`) and SHA-256 (hex), never the token;
 *   `expires_at` is NULL while the token lives as long as its operator, and set when a rotation
 *   replaced it (then, or at the end of its grace).
 * - `audit_log.token_id`: the id of the token a change was made with (`root`/`root-env` for
 *   root's); `audit_log.approved_by`: the second operator of a two-person action.
 */
export default `
  CREATE TABLE operators (
    name         TEXT PRIMARY KEY,
    scopes       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    last_used_at INTEGER
  ) STRICT;
  INSERT INTO operators (name, scopes, created_at) VALUES ('root', '["*"]', CAST(unixepoch('subsec') * 1000 AS INTEGER));

  CREATE TABLE operator_tokens (
    token_id   TEXT PRIMARY KEY,
    operator   TEXT NOT NULL REFERENCES operators (name),
    sha256     TEXT NOT NULL UNIQUE CHECK (length(sha256) = 64),
    created_at INTEGER NOT NULL,
    expires_at INTEGER
  ) STRICT;
  CREATE INDEX operator_tokens_by_operator ON operator_tokens (operator);

  ALTER TABLE audit_log ADD COLUMN token_id TEXT;
  ALTER TABLE audit_log ADD COLUMN approved_by TEXT;
`;
