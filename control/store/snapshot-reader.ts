/**
 * Reads a consistent full snapshot on a separate read-only connection: one read transaction
 * (WAL snapshot isolation) held across pages, so a million keys can be streamed in chunks
 * while the main connection keeps taking writes.
 */
import Database from 'better-sqlite3';
import type { Db } from './db';
import { flagsOf, type Flags, type SnapshotKey } from '../../protocol/snapshot';

/**
 * One row of {@link LIVE_KEYS_SQL} in raw mode, columns in SELECT order: a live key and one of
 * its live secrets, or a null hash when the key has none left.
 */
export type KeySecretRow = [
  row: number,
  id: string,
  expiresAt: number | null,
  endpoints: string,
  limitCount: number | null,
  limitWindowS: number | null,
  liftCount: number | null,
  liftWindowS: number | null,
  liftUntil: number | null,
  hash: string | null,
  secretExpiresAt: number | null,
];

/**
 * Up to `@limit` live keys chosen by `where`, in storage (rowid) order (PostgreSQL: `keys.seq`,
 * the order keys were inserted in), each with its live
 * secrets oldest first. Storage order reads the keys table front to back instead of looking
 * every row up through the id index: a million keys stream in about two thirds of the time.
 * A key without a live secret still gives a row (null hash), so the page cursor moves past it.
 *
 * On PostgreSQL each page's secrets are looked up key by key (`LATERAL`, through
 * `key_secrets_by_key`): left to itself the planner hash-joins the page with the whole of
 * `key_secrets`, a scan of every secret for every page (20 scans of 100,000 rows for one
 * 100,000-key snapshot).
 */
export const LIVE_KEYS_SQL = (where: string, dialect: 'sqlite' | 'postgres' = 'sqlite') => {
  const order = dialect === 'sqlite' ? 'rowid' : 'seq';
  const live = `(s.expires_at IS NULL OR s.expires_at > @now)`;
  const secrets =
    dialect === 'sqlite'
      ? `LEFT JOIN key_secrets s ON s.key_id = page.id AND ${live}`
      : // OFFSET 0 keeps the planner from flattening the subquery back into the hash join.
        `LEFT JOIN LATERAL (SELECT s.hash, s.expires_at, s.created_at FROM key_secrets s WHERE s.key_id = page.id AND ${live} OFFSET 0) s ON true`;
  return `
  WITH page AS (
    SELECT k.${order} AS row, k.id, k.expires_at, k.endpoints, k.limit_count, k.limit_window_s,
           k.lift_count, k.lift_window_s, k.lift_until
    FROM keys k
    WHERE ${where} AND k.status = 'active' AND (k.expires_at IS NULL OR k.expires_at > @now)
    ORDER BY k.${order} LIMIT @limit
  )
  SELECT page.*, s.hash, s.expires_at AS secret_expires_at
  FROM page ${secrets}
  ORDER BY page.row, s.created_at`;
};

/** Group joined key/secret rows (one key's rows together) into snapshot keys; keys without a live secret are left out. */
export function groupKeys(rows: readonly KeySecretRow[]): SnapshotKey[] {
  const out: SnapshotKey[] = [];
  let current: SnapshotKey | null = null;
  for (const [, id, expiresAt, endpoints, limitCount, limitWindowS, liftCount, liftWindowS, liftUntil, hash, secretExpiresAt] of rows) {
    if (hash === null) continue;
    if (current === null || current.id !== id) {
      current = {
        id,
        secrets: [],
        expires_at: expiresAt,
        endpoints: endpoints === '[]' ? [] : (JSON.parse(endpoints) as string[]),
        limit: limitCount !== null && limitWindowS !== null ? { count: limitCount, window_seconds: limitWindowS } : null,
        lift:
          liftCount !== null && liftWindowS !== null && liftUntil !== null
            ? { count: liftCount, window_seconds: liftWindowS, until: liftUntil }
            : null,
      };
      out.push(current);
    }
    current.secrets.push({ hash, expires_at: secretExpiresAt });
  }
  return out;
}

/** Snapshot query on an existing connection: the key `id`, if it admits anything right now. */
export function liveKeyStatement(db: Db): (id: string, now: number) => SnapshotKey | null {
  const stmt = db.prepare(LIVE_KEYS_SQL('k.id = @id')).raw();
  return (id, now) => groupKeys(stmt.all({ id, now, limit: 1 }) as KeySecretRow[])[0] ?? null;
}

export class SnapshotReader {
  private readonly db: Db;
  private readonly pageStmt;
  private readonly versionStmt;
  /** Rowid of the last key read; pages continue after it. */
  private after = 0;

  constructor(path: string) {
    this.db = new Database(path, { readonly: true, fileMustExist: true });
    this.pageStmt = this.db.prepare(LIVE_KEYS_SQL('k.rowid > @after')).raw();
    this.versionStmt = this.db.prepare(`SELECT value FROM meta WHERE name = 'state_version'`).pluck();
  }

  /** Start the read transaction; everything read until `end()` is one consistent state. */
  begin(): number {
    this.db.exec('BEGIN');
    this.after = 0;
    return this.versionStmt.get() as number;
  }

  /** Every flag's value in this read view (`flagsOf`, as deltas build them). */
  flags(): Flags {
    return flagsOf(this.db.prepare(`SELECT name, value FROM flags`).all() as { name: string; value: number }[]);
  }

  endpoints(): Record<string, unknown>[] {
    return this.db.prepare(`SELECT * FROM endpoints WHERE removed_at IS NULL ORDER BY id`).all() as Record<string, unknown>[];
  }

  liveKeyCount(now: number): number {
    return this.db
      .prepare(`SELECT count(*) FROM keys WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)`)
      .pluck()
      .get(now) as number;
  }

  /**
   * The live keys among the next `limit` in storage order (fewer, even none, when some have
   * no live secret left); null once every key has been read.
   */
  nextPage(limit: number, now: number): SnapshotKey[] | null {
    const rows = this.pageStmt.all({ after: this.after, limit, now }) as KeySecretRow[];
    if (rows.length === 0) return null;
    this.after = rows[rows.length - 1]![0];
    return groupKeys(rows);
  }

  end(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.db.close();
  }
}
