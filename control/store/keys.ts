/**
 * Keys and their secrets. Only SHA-256 hashes of secrets are stored (docs/design.md §5); the
 * display `prefix` is the first characters of the key, useless for authentication.
 */
import type { Db } from './db';
import type { KeyStatus, KeyView } from '../../protocol/admin';

export interface KeyRow {
  id: string;
  name: string | null;
  prefix: string;
  status: 'active' | 'revoked';
  created_at: number;
  created_by: string;
  expires_at: number | null;
  revoked_at: number | null;
  wallet: string | null;
  endpoints: string;
  limit_count: number | null;
  limit_window_s: number | null;
  lift_count: number | null;
  lift_window_s: number | null;
  lift_until: number | null;
  application_id: string | null;
}

export interface SecretRow {
  hash: string;
  key_id: string;
  prefix: string;
  created_at: number;
  expires_at: number | null;
}

export interface NewKey {
  id: string;
  name: string | null;
  prefix: string;
  hash: string;
  created_at: number;
  created_by: string;
  expires_at: number | null;
  wallet: string | null;
  endpoints: string[];
  limit: { count: number; window_seconds: number } | null;
  application_id: string | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Where a page of the key list ends: the last key's creation time and id (newest first). */
export interface KeyPosition {
  created_at: number;
  id: string;
}

/** One page of keys, newest first, and where the next page starts (null at the end). */
export interface KeyPage {
  rows: KeyRow[];
  next: KeyPosition | null;
}

/**
 * Rows one page may examine. `expired` and `active` are decided by `expires_at` against the
 * clock, which no index can hold, so a page over a sparse match stops here and hands back a
 * cursor (possibly with fewer keys than asked for) instead of scanning the whole table in one
 * synchronous call. @default 5000
 */
export const KEY_PAGE_SCAN_LIMIT = 5_000;

export class KeysTable {
  private readonly insertKey;
  private readonly insertSecretStmt;
  private readonly byIdStmt;
  private readonly bySecretStmt;
  private readonly listStmt;
  private readonly pageStmts;
  private readonly liveSecretsOfManyStmt;
  private readonly secretsOfStmt;
  private readonly revokeStmt;
  private readonly expireSecretsStmt;
  private readonly walletStmt;
  private readonly liftStmt;
  private readonly prefixStmt;
  private readonly countsStmt;

  constructor(db: Db) {
    this.insertKey = db.prepare(
      `INSERT INTO keys (id, name, prefix, status, created_at, created_by, expires_at, wallet, endpoints,
                         limit_count, limit_window_s, application_id)
       VALUES (@id, @name, @prefix, 'active', @created_at, @created_by, @expires_at, @wallet, @endpoints,
               @limit_count, @limit_window_s, @application_id)`,
    );
    this.insertSecretStmt = db.prepare(`INSERT INTO key_secrets (hash, key_id, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`);
    this.byIdStmt = db.prepare(`SELECT * FROM keys WHERE id = ?`);
    // By the secret's digest (the key_secrets primary key), as the gateway's table looks keys up.
    this.bySecretStmt = db.prepare(
      `SELECT k.* FROM key_secrets s JOIN keys k ON k.id = s.key_id WHERE s.hash = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
    );
    this.listStmt = db.prepare(`SELECT * FROM keys ORDER BY created_at DESC, id DESC`);
    // Keyset pages on keys_by_created / keys_by_status_created (migration 8), newest first.
    const page = (where: string) => db.prepare(`SELECT * FROM keys WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @take`);
    // Positions only, read from the covering index: what a filter on expiry scans.
    const scan = (where: string) =>
      db
        .prepare(
          `SELECT created_at, id, expires_at FROM keys WHERE status = 'active' ${where} ORDER BY created_at DESC, id DESC LIMIT @take`,
        )
        .raw();
    this.pageStmts = {
      all: { first: page('1'), after: page('(created_at, id) < (@at, @id)') },
      byStatus: {
        first: page('status = @status'),
        after: page('status = @status AND (created_at, id) < (@at, @id)'),
      },
      activeScan: { first: scan(''), after: scan('AND (created_at, id) < (@at, @id)') },
      byIds: db.prepare(`SELECT * FROM keys WHERE id IN (SELECT value FROM json_each(@ids))`),
    };
    this.liveSecretsOfManyStmt = db.prepare(
      `SELECT s.* FROM json_each(@ids) AS j JOIN key_secrets AS s ON s.key_id = j.value
       WHERE s.expires_at IS NULL OR s.expires_at > @now`,
    );
    this.secretsOfStmt = db.prepare(
      `SELECT * FROM key_secrets WHERE key_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC`,
    );
    this.revokeStmt = db.prepare(`UPDATE keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'`);
    this.expireSecretsStmt = db.prepare(
      // Never extends a secret that is already counting down (a second rotation keeps the first grace).
      `UPDATE key_secrets SET expires_at = min(coalesce(expires_at, @at), @at)
       WHERE key_id = @keyId AND (expires_at IS NULL OR expires_at > @now)`,
    );
    this.walletStmt = db.prepare(`UPDATE keys SET wallet = ? WHERE id = ?`);
    this.liftStmt = db.prepare(`UPDATE keys SET lift_count = ?, lift_window_s = ?, lift_until = ? WHERE id = ?`);
    this.prefixStmt = db.prepare(`UPDATE keys SET prefix = ? WHERE id = ?`);
    this.countsStmt = db.prepare(
      `SELECT count(*) AS total,
              coalesce(sum(status = 'active' AND (expires_at IS NULL OR expires_at > ?)), 0) AS active
       FROM keys`,
    );
  }

  insert(key: NewKey): void {
    this.insertKey.run(newKeyParams(key));
    this.insertSecretStmt.run(key.hash, key.id, key.prefix, key.created_at, null);
  }

  /** Add a secret to an existing key (rotation). */
  addSecret(keyId: string, hash: string, prefix: string, at: number): void {
    this.insertSecretStmt.run(hash, keyId, prefix, at, null);
    this.prefixStmt.run(prefix, keyId);
  }

  /** Let every live secret of `keyId` expire at `at` (rotation grace or revocation). */
  expireSecrets(keyId: string, at: number, now: number): void {
    this.expireSecretsStmt.run({ at, keyId, now });
  }

  byId(id: string): KeyRow | undefined {
    return this.byIdStmt.get(id) as KeyRow | undefined;
  }

  /** Every key, newest first. Reads the whole table: for tests and small tools, not the API. */
  /** The key whose live secret has SHA-256 `hash` (hex) at `now`, whatever the key's own status. */
  bySecret(hash: string, now: number): KeyRow | undefined {
    return this.bySecretStmt.get(hash, now) as KeyRow | undefined;
  }

  list(): KeyRow[] {
    return this.listStmt.all() as KeyRow[];
  }

  /**
   * One page of keys, newest first (`created_at`, then `id`, both descending), after `after`
   * when given, with status `status` (as {@link keyStatus} decides it at `now`) when given.
   * Keyset pagination on an index: the cost of a page does not grow with how deep it is.
   *
   * `revoked` (and no filter) is a range of the index. `active` and `expired` depend on the
   * clock, so their page scans at most `max(limit + 1, scanLimit)` positions of the covering
   * index and may come back short (even empty) with a `next` to go on from. `next` is null
   * only when nothing is left.
   */
  page(opts: { limit: number; after?: KeyPosition | null; status?: KeyStatus; now: number; scanLimit?: number }): KeyPage {
    const { limit, now, status } = opts;
    const after = opts.after ? { at: opts.after.created_at, id: opts.after.id } : {};

    if (status === undefined || status === 'revoked') {
      const stmts = status === undefined ? this.pageStmts.all : this.pageStmts.byStatus;
      const stmt = opts.after ? stmts.after : stmts.first;
      return cutPage(stmt.all({ take: limit + 1, ...after, ...(status ? { status } : {}) }) as KeyRow[], limit);
    }

    const take = scanTake(limit, opts.scanLimit);
    const stmt = opts.after ? this.pageStmts.activeScan.after : this.pageStmts.activeScan.first;
    const { ids, next } = scanPositions(stmt.iterate({ take, ...after }) as IterableIterator<ScannedKey>, { take, limit, status, now });
    const byId = new Map((this.pageStmts.byIds.all({ ids: JSON.stringify(ids) }) as KeyRow[]).map((r) => [r.id, r]));
    return { rows: ids.map((id) => byId.get(id)!), next };
  }

  liveSecrets(keyId: string, now: number): SecretRow[] {
    return this.secretsOfStmt.all(keyId, now) as SecretRow[];
  }

  /** Live secrets of many keys in one query, by key id (newest secret first). */
  liveSecretsOf(keyIds: readonly string[], now: number): Map<string, SecretRow[]> {
    if (keyIds.length === 0) return new Map();
    return secretsByKey(this.liveSecretsOfManyStmt.all({ ids: JSON.stringify(keyIds), now }) as SecretRow[]);
  }

  revoke(id: string, at: number): boolean {
    return this.revokeStmt.run(at, id).changes === 1;
  }

  setWallet(id: string, wallet: string | null): void {
    this.walletStmt.run(wallet, id);
  }

  setLift(id: string, lift: { count: number; window_seconds: number; until: number } | null): void {
    this.liftStmt.run(lift?.count ?? null, lift?.window_seconds ?? null, lift?.until ?? null, id);
  }

  counts(now: number): { total: number; active: number } {
    return this.countsStmt.get(now) as { total: number; active: number };
  }
}

/** A scanned position of the covering index: `created_at`, `id`, `expires_at`. */
export type ScannedKey = [number, string, number | null];

/** Positions an `active` or `expired` page examines at most (see `KeysTable.page`). */
export function scanTake(limit: number, scanLimit: number | undefined): number {
  return Math.max(limit + 1, scanLimit ?? KEY_PAGE_SCAN_LIMIT);
}

/** A page of `limit` keys from `rows`, read `limit + 1` at a time: the extra one says whether more follow. */
export function cutPage(rows: KeyRow[], limit: number): KeyPage {
  if (rows.length <= limit) return { rows, next: null };
  rows.length = limit;
  const last = rows[limit - 1]!;
  return { rows, next: { created_at: last.created_at, id: last.id } };
}

/**
 * The ids of the keys with `status` at `now` among `take` scanned positions of active keys
 * (newest first), at most `limit`, and where the next page starts: after the page's last key
 * when one more match exists, after the last position examined when all `take` were scanned
 * without filling the page, else null. Stops reading `positions` once it knows.
 */
export function scanPositions(
  positions: Iterable<ScannedKey>,
  opts: { take: number; limit: number; status: KeyStatus; now: number },
): { ids: string[]; next: KeyPosition | null } {
  const { take, limit, status, now } = opts;
  const ids: string[] = [];
  let last: KeyPosition | null = null;
  let scanned = 0;
  let next: KeyPosition | null = null;
  for (const [createdAt, id, expiresAt] of positions) {
    scanned += 1;
    if (storedKeyStatus('active', expiresAt, now) === status) {
      if (ids.length === limit) {
        // One more match exists: this page is full and the next one starts after its last key.
        next = last;
        break;
      }
      ids.push(id);
    }
    last = { created_at: createdAt, id };
  }
  // Scanned `take` positions without filling the page: go on after the last one examined.
  if (next === null && scanned === take && last !== null) next = last;
  return { ids, next };
}

/** Live secret rows grouped by key id, each key's newest first. */
export function secretsByKey(rows: Iterable<SecretRow>): Map<string, SecretRow[]> {
  const out = new Map<string, SecretRow[]>();
  for (const row of rows) {
    const list = out.get(row.key_id);
    if (list) list.push(row);
    else out.set(row.key_id, [row]);
  }
  for (const list of out.values()) if (list.length > 1) list.sort((a, b) => b.created_at - a.created_at);
  return out;
}

/** The `keys` columns of a new key, as the insert statement takes them. */
export function newKeyParams(key: NewKey): Record<string, unknown> {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    created_at: key.created_at,
    created_by: key.created_by,
    expires_at: key.expires_at,
    wallet: key.wallet,
    endpoints: JSON.stringify(key.endpoints),
    limit_count: key.limit?.count ?? null,
    limit_window_s: key.limit?.window_seconds ?? null,
    application_id: key.application_id,
  };
}

/** A key's status at `now` from its stored status and expiry. */
export function storedKeyStatus(stored: KeyRow['status'], expiresAt: number | null, now: number): KeyStatus {
  if (stored === 'revoked') return 'revoked';
  if (expiresAt !== null && expiresAt <= now) return 'expired';
  return 'active';
}

export function keyStatus(row: KeyRow, now: number): KeyStatus {
  return storedKeyStatus(row.status, row.expires_at, now);
}

export function keyView(row: KeyRow, secrets: SecretRow[], now: number): KeyView {
  const liftLive = row.lift_until !== null && row.lift_until > now;
  const status = keyStatus(row, now);
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    status,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
    wallet: row.wallet,
    endpoints: JSON.parse(row.endpoints) as string[],
    limit: row.limit_count !== null && row.limit_window_s !== null ? { count: row.limit_count, window_seconds: row.limit_window_s } : null,
    lift:
      liftLive && row.lift_count !== null && row.lift_window_s !== null
        ? { count: row.lift_count, window_seconds: row.lift_window_s, until: iso(row.lift_until)! }
        : null,
    application_id: row.application_id,
    secrets:
      status === 'active' ? secrets.map((s) => ({ prefix: s.prefix, created_at: iso(s.created_at)!, expires_at: iso(s.expires_at) })) : [],
  };
}
