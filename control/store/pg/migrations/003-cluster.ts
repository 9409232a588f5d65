/**
 * Several controls on one database: `controls`, the registry (each control's id, the admin URL
 * it serves, when it started and when it last said it was alive, every few seconds), and
 * `settler_lease`, the one row saying which control runs the settler and until when. PostgreSQL
 * only: a SQLite store belongs to the one control of its data dir, so it has neither.
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
`;
