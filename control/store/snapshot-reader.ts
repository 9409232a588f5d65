/**
 * Reads a consistent full snapshot on a separate read-only connection: one read transaction
 * (WAL snapshot isolation) held across pages, so a million keys can be streamed in chunks
 * while the main connection keeps taking writes.
 */
import Database from 'better-sqlite3';
import type { Db } from './db';
import type { KeyRow } from './keys';
import type { SnapshotKey } from '../../protocol/snapshot';

export type KeySecretRow = Pick<
  KeyRow,
  'id' | 'expires_at' | 'endpoints' | 'limit_count' | 'limit_window_s' | 'lift_count' | 'lift_window_s' | 'lift_until'
> & { hash: string; secret_expires_at: number | null };

const LIVE_KEYS_SQL = (where: string) => `
  WITH page AS (
    SELECT id FROM keys
    WHERE ${where} AND status = 'active' AND (expires_at IS NULL OR expires_at > @now)
    ORDER BY id LIMIT @limit
  )
  SELECT k.id, k.expires_at, k.endpoints, k.limit_count, k.limit_window_s, k.lift_count, k.lift_window_s, k.lift_until,
         s.hash, s.expires_at AS secret_expires_at
  FROM page JOIN keys k ON k.id = page.id JOIN key_secrets s ON s.key_id = k.id
  WHERE s.expires_at IS NULL OR s.expires_at > @now
  ORDER BY k.id, s.created_at`;

/** Group joined key/secret rows (ordered by key id) into snapshot keys. */
export function groupKeys(rows: KeySecretRow[]): SnapshotKey[] {
  const out: SnapshotKey[] = [];
  let current: SnapshotKey | null = null;
  for (const row of rows) {
    if (current === null || current.id !== row.id) {
      current = {
        id: row.id,
        secrets: [],
        expires_at: row.expires_at,
        endpoints: JSON.parse(row.endpoints) as string[],
        limit: row.limit_count !== null && row.limit_window_s !== null ? { count: row.limit_count, window_seconds: row.limit_window_s } : null,
        lift:
          row.lift_count !== null && row.lift_window_s !== null && row.lift_until !== null
            ? { count: row.lift_count, window_seconds: row.lift_window_s, until: row.lift_until }
            : null,
      };
      out.push(current);
    }
    current.secrets.push({ hash: row.hash, expires_at: row.secret_expires_at });
  }
  return out;
}

/** Snapshot query on an existing connection: the key `id`, if it admits anything right now. */
export function liveKeyStatement(db: Db): (id: string, now: number) => SnapshotKey | null {
  const stmt = db.prepare(LIVE_KEYS_SQL('id = @id'));
  return (id, now) => groupKeys(stmt.all({ id, now, limit: 1 }) as KeySecretRow[])[0] ?? null;
}

export class SnapshotReader {
  private readonly db: Db;
  private readonly pageStmt;
  private readonly versionStmt;

  constructor(path: string) {
    this.db = new Database(path, { readonly: true, fileMustExist: true });
    this.pageStmt = this.db.prepare(LIVE_KEYS_SQL('id > @after'));
    this.versionStmt = this.db.prepare(`SELECT value FROM meta WHERE name = 'state_version'`).pluck();
  }

  /** Start the read transaction; everything read until `end()` is one consistent state. */
  begin(): number {
    this.db.exec('BEGIN');
    return this.versionStmt.get() as number;
  }

  flags(): { name: string; value: number }[] {
    return this.db.prepare(`SELECT name, value FROM flags`).all() as { name: string; value: number }[];
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

  /** Up to `limit` live keys with ids after `after`, in id order. */
  page(after: string, limit: number, now: number): SnapshotKey[] {
    return groupKeys(this.pageStmt.all({ after, limit, now }) as KeySecretRow[]);
  }

  end(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.db.close();
  }
}
