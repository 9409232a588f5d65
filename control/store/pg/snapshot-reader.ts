/**
 * The full snapshot's reads on PostgreSQL: one connection of the pool holding one
 * `REPEATABLE READ` read-only transaction from `begin()` to `end()`, so every page is read at
 * the state version `begin()` answered while other connections keep taking writes. Keys page
 * in insertion order (`keys.seq`), as SQLite's pages go in rowid order.
 */
import type { Pool, PoolClient } from 'pg';
import type { SnapshotReads } from '../index';
import { LIVE_KEYS_SQL, groupKeys, type KeySecretRow } from '../snapshot-reader';
import { flagsOf, type Flags, type SnapshotKey } from '../../../protocol/snapshot';
import { PgConn, sql } from './conn';
import { unreachable } from './unreachable';

const Q = {
  version: sql(`SELECT value FROM meta WHERE name = 'state_version'`),
  flags: sql(`SELECT name, value FROM flags`),
  endpoints: sql(`SELECT * FROM endpoints WHERE removed_at IS NULL ORDER BY id`),
  liveKeyCount: sql(`SELECT count(*) FROM keys WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)`),
  page: sql(LIVE_KEYS_SQL('k.seq > @after', 'postgres')),
  liveKey: sql(LIVE_KEYS_SQL('k.id = @id', 'postgres')),
};

/** The key `id` as gateways must enforce it at `now`, or null when it admits nothing. */
export async function pgLiveKey(conn: PgConn, id: string, now: number): Promise<SnapshotKey | null> {
  return groupKeys(await conn.raw<KeySecretRow>(Q.liveKey, { id, now, limit: 1 }))[0] ?? null;
}

export class PgSnapshotReader implements SnapshotReads {
  private client: PoolClient | null = null;
  private conn: PgConn | null = null;
  /** `keys.seq` of the last key read; pages continue after it. */
  private after = 0;

  constructor(private readonly pool: Pool) {}

  private get on(): PgConn {
    if (this.conn === null) throw new Error('snapshot reader: begin() first');
    return this.conn;
  }

  async begin(): Promise<number> {
    if (this.client === null) {
      try {
        this.client = await this.pool.connect();
      } catch (err) {
        throw unreachable(err, this.pool);
      }
      try {
        await this.client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      } catch (err) {
        this.client.release(err as Error);
        this.client = null;
        throw unreachable(err, this.pool);
      }
      // A connection of its own: statements run on it, inside the transaction just begun.
      this.conn = new PgConn(this.pool, this.client, 'read');
    }
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
    const client = this.client;
    if (client === null) return;
    this.client = null;
    this.conn = null;
    let broken: Error | undefined;
    await client.query('COMMIT').catch((err: Error) => (broken = err));
    client.release(broken);
  }
}
