/**
 * Operators, their tokens (SHA-256 only) and the audit log's `token_id` and `approved_by`:
 * SQLite's migration 16 (`../../migrations/016-operators.ts`), which says what each holds.
 */
export default `
  CREATE TABLE operators (
    name         TEXT COLLATE "C" PRIMARY KEY,
    scopes       TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    revoked_at   BIGINT,
    last_used_at BIGINT
  );
  INSERT INTO operators (name, scopes, created_at) VALUES ('root', '["*"]', floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);

  CREATE TABLE operator_tokens (
    token_id   TEXT COLLATE "C" PRIMARY KEY,
    operator   TEXT COLLATE "C" NOT NULL REFERENCES operators (name),
    sha256     TEXT COLLATE "C" NOT NULL UNIQUE CHECK (length(sha256) = 64),
    created_at BIGINT NOT NULL,
    expires_at BIGINT
  );
  CREATE INDEX operator_tokens_by_operator ON operator_tokens (operator);

  ALTER TABLE audit_log ADD COLUMN token_id TEXT COLLATE "C";
  ALTER TABLE audit_log ADD COLUMN approved_by TEXT COLLATE "C";
`;
