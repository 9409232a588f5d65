/** A full snapshot's reads (`../snapshot-reads.ts`), on either database. */
import { flagsOf, type Flags, type SnapshotKey } from '../../../protocol/snapshot';
import { sql, type Conn } from '../conn';
import { LIVE_KEYS_SQL, groupKeys, type KeySecretRow, type SnapshotReads } from '../snapshot-reads';

const Q = {
  version: sql(`SELECT value FROM meta WHERE name = 'state_version'`),
  flags: sql(`SELECT name, value FROM flags`),
  endpoints: sql(`SELECT * FROM endpoints WHERE removed_at IS NULL ORDER BY id`),
  liveKeyCount: sql(`SELECT count(*) FROM keys WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)`),
  // Storage order: SQLite's rowid, PostgreSQL's `keys.seq` (the order keys were inserted in).
  page: sql({ sqlite: LIVE_KEYS_SQL('k.rowid > @after'), pg: LIVE_KEYS_SQL('k.seq > @after', 'postgres') }),
  liveKey: sql({ sqlite: LIVE_KEYS_SQL('k.id = @id'), pg: LIVE_KEYS_SQL('k.id = @id', 'postgres') }),
};

/** The key `id` as gateways must enforce it at `now`, or null when it admits nothing. */
export async function liveKey(conn: Conn, id: string, now: number): Promise<SnapshotKey | null> {
  return groupKeys(await conn.raw<KeySecretRow>(Q.liveKey, { id, now, limit: 1 }))[0] ?? null;
}

/** Where a snapshot's read transaction runs: a connection of its own, opened and given back by its store. */
export interface ReadSession {
  /** A connection of its own, inside a read-only transaction begun on it. */
  open(): Promise<Conn>;
  /** End the transaction and give the connection back. */
  close(): Promise<void>;
}

export class SqlSnapshotReads implements SnapshotReads {
  private conn: Conn | null = null;
  /** Storage position of the last key read; pages continue after it. */
  private after = 0;

  constructor(private readonly session: ReadSession) {}

  private get on(): Conn {
    if (this.conn === null) throw new TypeError('snapshot reader: begin() first');
    return this.conn;
  }

  async begin(): Promise<number> {
    this.conn ??= await this.session.open();
    this.after = 0;
    return (await this.on.value<number>(Q.version))!;
  }

  async flags(): Promise<Flags> {
    return flagsOf(await this.on.all<{ name: string; value: number }>(Q.flags));
  }

  endpoints(): Promise<Record<string, unknown>[]> {
    return this.on.all<Record<string, unknown>>(Q.endpoints);
  }

  async liveKeyCount(now: number): Promise<number> {
    return (await this.on.value<number>(Q.liveKeyCount, [now]))!;
  }

  async nextPage(limit: number, now: number): Promise<SnapshotKey[] | null> {
    const rows = await this.on.raw<KeySecretRow>(Q.page, { after: this.after, limit, now });
    if (rows.length === 0) return null;
    this.after = rows[rows.length - 1]![0];
    return groupKeys(rows);
  }

  async end(): Promise<void> {
    if (this.conn === null) return;
    this.conn = null;
    await this.session.close();
  }
}
