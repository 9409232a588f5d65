/**
 * A full snapshot's reads (`SnapshotReads`), on a connection of their own holding one read
 * transaction across pages, so a million keys can be streamed in chunks while the store's
 * other connections keep taking writes; and the live-keys query both the full snapshot and a
 * delta's one key read (`StoreTables.liveKey`).
 */
import type { Flags, SnapshotKey } from '../../protocol/snapshot';

/** What `Store.openSnapshotReader` answers: every read between `begin()` and `end()` sees one state. */
export interface SnapshotReads {
  /** Open the read transaction; answers the state version it sees. */
  begin(): Promise<number>;
  /** Every flag's value in this read view (`flagsOf`, as deltas build them). */
  flags(): Promise<Flags>;
  /** The endpoints gateways route to (not removed), by id, as stored. */
  endpoints(): Promise<Record<string, unknown>[]>;
  liveKeyCount(now: number): Promise<number>;
  /**
   * The live keys among the next `limit` in storage order (fewer, even none, when some have
   * no live secret left); null once every key has been read.
   */
  nextPage(limit: number, now: number): Promise<SnapshotKey[] | null>;
  /** End the read transaction and give the connection back. */
  end(): Promise<void>;
}

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
  account: string,
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
           k.lift_count, k.lift_window_s, k.lift_until, k.account_id
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
  for (const [
    ,
    id,
    expiresAt,
    endpoints,
    limitCount,
    limitWindowS,
    liftCount,
    liftWindowS,
    liftUntil,
    account,
    hash,
    secretExpiresAt,
  ] of rows) {
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
        account,
      };
      out.push(current);
    }
    current.secrets.push({ hash, expires_at: secretExpiresAt });
  }
  return out;
}
