/**
 * 8: `shared_snapshots` and `shared_snapshot_lines`, the newest full snapshot one control built,
 * kept for the other controls on the database (`cluster-table.ts`, `ClusterTable.snapshotOnce`):
 * a gateway that needs a full snapshot at that version gets these lines from whichever control
 * it is attached to, and only one control reads the keys and writes the lines. PostgreSQL only,
 * as the other tables of several controls (migration 3).
 *
 * The lines are the snapshot's JSON lines as gateways receive them (without their newlines):
 * key ids, secrets' SHA-256 digests, expiries and limits, never a key. Both tables are a cache
 * of what the keys, flags and endpoints already say, so they are `UNLOGGED`: no WAL for some
 * 20 MB per 100,000 keys, at the price of being emptied by a crash of the server and absent on
 * a standby (the first gateway to need a snapshot then has one built, as on a fresh database).
 * Lines are stored uncompressed (`STORAGE EXTERNAL`): compressing them costs more CPU than
 * they save in a table that holds one snapshot.
 */
export default `
  CREATE UNLOGGED TABLE shared_snapshots (
    epoch      BIGINT NOT NULL,
    version    BIGINT NOT NULL,
    sha256     TEXT COLLATE "C" NOT NULL CHECK (length(sha256) = 64),
    lines      INTEGER NOT NULL CHECK (lines > 0),
    built_by   TEXT COLLATE "C" NOT NULL,
    built_at   BIGINT NOT NULL,
    PRIMARY KEY (epoch, version)
  );

  CREATE UNLOGGED TABLE shared_snapshot_lines (
    epoch   BIGINT NOT NULL,
    version BIGINT NOT NULL,
    n       INTEGER NOT NULL,
    line    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (epoch, version, n),
    FOREIGN KEY (epoch, version) REFERENCES shared_snapshots (epoch, version) ON DELETE CASCADE
  );
  ALTER TABLE shared_snapshot_lines ALTER COLUMN line SET STORAGE EXTERNAL;
`;
