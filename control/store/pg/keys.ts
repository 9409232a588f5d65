/**
 * Keys and their secrets on PostgreSQL: `../keys.ts`'s statements, asynchronous, and its page
 * logic. `keys.seq` (SQLite's rowid order, for the full snapshot) is an identity column the
 * insert leaves to the database.
 */
import type { KeyStatus } from '../../../protocol/admin';
import {
  cutPage,
  newKeyParams,
  scanPositions,
  scanTake,
  secretsByKey,
  type KeyPage,
  type KeyPosition,
  type KeyRow,
  type KeysTable,
  type NewKey,
  type ScannedKey,
  type SecretRow,
} from '../keys';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';

/** A key row's columns as SQLite's `SELECT *` has them: `seq` is PostgreSQL's alone. */
const KEY_COLUMNS = `id, name, prefix, status, created_at, created_by, expires_at, revoked_at, wallet, endpoints,
  limit_count, limit_window_s, lift_count, lift_window_s, lift_until, application_id`;

// Keyset pages on keys_by_created / keys_by_status_created, newest first.
const page = (where: string) => sql(`SELECT ${KEY_COLUMNS} FROM keys WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @take`);
// Positions only, from the covering index: what a filter on expiry scans.
const scan = (where: string) =>
  sql(`SELECT created_at, id, expires_at FROM keys WHERE status = 'active' ${where} ORDER BY created_at DESC, id DESC LIMIT @take`);

const Q = {
  insertKey: sql(
    `INSERT INTO keys (id, name, prefix, status, created_at, created_by, expires_at, wallet, endpoints,
                       limit_count, limit_window_s, application_id)
     VALUES (@id, @name, @prefix, 'active', @created_at, @created_by, @expires_at, @wallet, @endpoints,
             @limit_count, @limit_window_s, @application_id)`,
  ),
  insertSecret: sql(`INSERT INTO key_secrets (hash, key_id, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`),
  byId: sql(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = ?`),
  bySecret: sql(
    `SELECT ${KEY_COLUMNS.replace(/(\w+)/g, 'k.$1')} FROM key_secrets s JOIN keys k ON k.id = s.key_id
     WHERE s.hash = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
  ),
  list: sql(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at DESC, id DESC`),
  page: {
    all: { first: page('true'), after: page('(created_at, id) < (@at, @id)') },
    byStatus: {
      first: page('status = @status'),
      after: page('status = @status AND (created_at, id) < (@at, @id)'),
    },
    activeScan: { first: scan(''), after: scan('AND (created_at, id) < (@at, @id)') },
    byIds: sql(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = ANY(@ids::text[])`),
  },
  // Secrets created in the same millisecond come in hash order (SQLite's come in insertion order).
  liveSecretsOfMany: sql(
    `SELECT * FROM key_secrets WHERE key_id = ANY(@ids::text[]) AND (expires_at IS NULL OR expires_at > @now)
     ORDER BY key_id, created_at DESC, hash`,
  ),
  secretsOf: sql(`SELECT * FROM key_secrets WHERE key_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC, hash`),
  revoke: sql(`UPDATE keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'`),
  // Never extends a secret that is already counting down (a second rotation keeps the first grace).
  expireSecrets: sql(
    `UPDATE key_secrets SET expires_at = LEAST(coalesce(expires_at, @at), @at)
     WHERE key_id = @keyId AND (expires_at IS NULL OR expires_at > @now)`,
  ),
  wallet: sql(`UPDATE keys SET wallet = ? WHERE id = ?`),
  lift: sql(`UPDATE keys SET lift_count = ?, lift_window_s = ?, lift_until = ? WHERE id = ?`),
  prefix: sql(`UPDATE keys SET prefix = ? WHERE id = ?`),
  counts: sql(
    `SELECT count(*) AS total,
            count(*) FILTER (WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)) AS active
     FROM keys`,
  ),
};

export class PgKeysTable implements Async<KeysTable> {
  constructor(private readonly conn: PgConn) {}

  async insert(key: NewKey): Promise<void> {
    await this.conn.tx(async (conn) => {
      await conn.run(Q.insertKey, newKeyParams(key));
      await conn.run(Q.insertSecret, [key.hash, key.id, key.prefix, key.created_at, null]);
    });
  }

  /** Add a secret to an existing key (rotation). */
  async addSecret(keyId: string, hash: string, prefix: string, at: number): Promise<void> {
    await this.conn.tx(async (conn) => {
      await conn.run(Q.insertSecret, [hash, keyId, prefix, at, null]);
      await conn.run(Q.prefix, [prefix, keyId]);
    });
  }

  /** Let every live secret of `keyId` expire at `at` (rotation grace or revocation). */
  async expireSecrets(keyId: string, at: number, now: number): Promise<void> {
    await this.conn.run(Q.expireSecrets, { at, keyId, now });
  }

  async byId(id: string): Promise<KeyRow | undefined> {
    return this.conn.get<KeyRow>(Q.byId, [id]);
  }

  /** The key whose live secret has SHA-256 `hash` (hex) at `now`, whatever the key's own status. */
  async bySecret(hash: string, now: number): Promise<KeyRow | undefined> {
    return this.conn.get<KeyRow>(Q.bySecret, [hash, now]);
  }

  /** Every key, newest first. Reads the whole table: for tests and small tools, not the API. */
  async list(): Promise<KeyRow[]> {
    return this.conn.all<KeyRow>(Q.list);
  }

  /**
   * One page of keys, as `KeysTable.page` pages them. An `active` or `expired` page reads its
   * `take` positions and then the keys it picked, in one read transaction (one state).
   */
  async page(opts: { limit: number; after?: KeyPosition | null; status?: KeyStatus; now: number; scanLimit?: number }): Promise<KeyPage> {
    const { limit, now, status } = opts;
    const after = opts.after ? { at: opts.after.created_at, id: opts.after.id } : {};

    if (status === undefined || status === 'revoked') {
      const stmts = status === undefined ? Q.page.all : Q.page.byStatus;
      const stmt = opts.after ? stmts.after : stmts.first;
      return cutPage(await this.conn.all<KeyRow>(stmt, { take: limit + 1, ...after, ...(status ? { status } : {}) }), limit);
    }

    const take = scanTake(limit, opts.scanLimit);
    const stmt = opts.after ? Q.page.activeScan.after : Q.page.activeScan.first;
    return this.conn.tx(async (conn) => {
      const { ids, next } = scanPositions(await conn.raw<ScannedKey>(stmt, { take, ...after }), { take, limit, status, now });
      if (ids.length === 0) return { rows: [], next };
      const byId = new Map((await conn.all<KeyRow>(Q.page.byIds, { ids })).map((r) => [r.id, r]));
      return { rows: ids.map((id) => byId.get(id)!), next };
    }, 'read');
  }

  async liveSecrets(keyId: string, now: number): Promise<SecretRow[]> {
    return this.conn.all<SecretRow>(Q.secretsOf, [keyId, now]);
  }

  /** Live secrets of many keys in one query, by key id (newest secret first). */
  async liveSecretsOf(keyIds: readonly string[], now: number): Promise<Map<string, SecretRow[]>> {
    if (keyIds.length === 0) return new Map();
    return secretsByKey(await this.conn.all<SecretRow>(Q.liveSecretsOfMany, { ids: keyIds, now }));
  }

  async revoke(id: string, at: number): Promise<boolean> {
    return (await this.conn.run(Q.revoke, [at, id])) === 1;
  }

  async setWallet(id: string, wallet: string | null): Promise<void> {
    await this.conn.run(Q.wallet, [wallet, id]);
  }

  async setLift(id: string, lift: { count: number; window_seconds: number; until: number } | null): Promise<void> {
    await this.conn.run(Q.lift, [lift?.count ?? null, lift?.window_seconds ?? null, lift?.until ?? null, id]);
  }

  async counts(now: number): Promise<{ total: number; active: number }> {
    return (await this.conn.get<{ total: number; active: number }>(Q.counts, [now]))!;
  }
}
