/**
 * Several controls on one database: `controls`, the registry (each control's id, the admin URL
 * it serves, when it started and when it last said it was alive, every few seconds),
 * `settler_lease`, the one row saying which control runs the settler and until when, and
 * `control_tokens`, the SHA-256 of the admin, sync and metrics tokens every control accepts
 * (the first control's, with where it wrote them; never the tokens). PostgreSQL only: a SQLite
 * store belongs to the one control of its data dir, so it has none of them.
 *
 * Times are BIGINT ms, read from the database's clock (`clock_timestamp()`) by the statements
 * that write them, so controls on hosts whose clocks disagree still agree on when a lease lapses.
 */
export default `
  CREATE TABLE controls (
    id         TEXT COLLATE "C" PRIMARY KEY,
    url        TEXT COLLATE "C" NOT NULL,
    started_at BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL
  );

  CREATE TABLE settler_lease (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    holder     TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL
  );

  CREATE TABLE control_tokens (
    name       TEXT COLLATE "C" PRIMARY KEY CHECK (name IN ('admin', 'sync', 'metrics')),
    sha256     BYTEA NOT NULL CHECK (length(sha256) = 32),
    control_id TEXT COLLATE "C" NOT NULL,
    file       TEXT COLLATE "C",
    created_at BIGINT NOT NULL
  );
`;
