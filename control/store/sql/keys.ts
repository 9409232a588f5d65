/**
 * Keys and their secrets (`../keys.ts`), on either database. On PostgreSQL `keys.seq` (SQLite's
 * rowid order, for the full snapshot) is an identity column the insert leaves to the database,
 * and no read here returns it.
 */
import type { KeyStatus } from '../../../protocol/admin';
import { InvariantError } from '../../../protocol/coded-error';
import { sql, type Conn } from '../conn';
import {
  KEY_PAGE_SCAN_LIMIT,
  storedKeyStatus,
  type KeyPage,
  type KeyPosition,
  type KeyRow,
  type KeysTable,
  ownAccountId,
  type NewKey,
  type SecretRow,
} from '../keys';

/** A key row's columns (PostgreSQL's table also has `seq`). */
const KEY_COLUMNS = `id, name, prefix, status, created_at, created_by, expires_at, revoked_at, wallet, endpoints,
  limit_count, limit_window_s, lift_count, lift_window_s, lift_until, application_id, account_id`;

/** `text` with `IN_IDS` standing for membership in `@ids`, a JSON array of key ids. */
const inIds = (text: string) =>
  sql({
    sqlite: text.replace('IN_IDS', 'IN (SELECT value FROM json_each(@ids))'),
    pg: text.replace('IN_IDS', '= ANY(ARRAY(SELECT json_array_elements_text(CAST(@ids AS json))))'),
  });

// Keyset pages on keys_by_created / keys_by_status_created (SQLite migration 8), newest first.
const page = (where: string) => sql(`SELECT ${KEY_COLUMNS} FROM keys WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @take`);
// Positions only, from the covering index: what a filter on expiry scans.
const scan = (where: string) =>
  sql(`SELECT created_at, id, expires_at FROM keys WHERE status = 'active' ${where} ORDER BY created_at DESC, id DESC LIMIT @take`);

const Q = {
  insertKey: sql(
    `INSERT INTO keys (id, name, prefix, status, created_at, created_by, expires_at, wallet, endpoints,
                       limit_count, limit_window_s, application_id, account_id)
     VALUES (@id, @name, @prefix, 'active', @created_at, @created_by, @expires_at, @wallet, @endpoints,
             @limit_count, @limit_window_s, @application_id, @account_id)`,
  ),
  ownAccount: sql(`INSERT INTO accounts (id, name, wallet, created_at, created_by) VALUES (?, ?, ?, ?, ?)`),
  insertSecret: sql(`INSERT INTO key_secrets (hash, key_id, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`),
  byId: sql(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = ?`),
  // By the secret's digest (the key_secrets primary key), as the gateway's table looks keys up.
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
    byIds: inIds(`SELECT ${KEY_COLUMNS} FROM keys WHERE id IN_IDS`),
  },
  // Secrets created in the same millisecond come in hash order.
  liveSecretsOfMany: inIds(
    `SELECT * FROM key_secrets WHERE key_id IN_IDS AND (expires_at IS NULL OR expires_at > @now) ORDER BY key_id, created_at DESC, hash`,
  ),
  secretsOf: sql(`SELECT * FROM key_secrets WHERE key_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC, hash`),
  revoke: sql(`UPDATE keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'`),
  // Live secrets not already expiring by `at` (a second rotation keeps the first grace).
  expireSecrets: sql(
    `UPDATE key_secrets SET expires_at = @at
     WHERE key_id = @keyId AND (expires_at IS NULL OR (expires_at > @now AND expires_at > @at))`,
  ),
  // The key's account's wallet, and its mirror on each of the account's keys (keys_by_account).
  accountWallet: sql(`UPDATE accounts SET wallet = ? WHERE id = (SELECT account_id FROM keys WHERE id = ?)`),
  wallet: sql(`UPDATE keys SET wallet = ? WHERE account_id = (SELECT account_id FROM keys WHERE id = ?)`),
  lift: sql(`UPDATE keys SET lift_count = ?, lift_window_s = ?, lift_until = ? WHERE id = ?`),
  prefix: sql(`UPDATE keys SET prefix = ? WHERE id = ?`),
  accountsOf: inIds(`SELECT id, account_id FROM keys WHERE id IN_IDS`),
  counts: sql(
    `SELECT count(*) AS total,
            count(*) FILTER (WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)) AS active
     FROM keys`,
  ),
};

/** A scanned position of the covering index: `created_at`, `id`, `expires_at`. */
type ScannedKey = [number, string, number | null];

export class SqlKeysTable implements KeysTable {
  constructor(private readonly conn: Conn) {}

  async insert(key: NewKey): Promise<void> {
    await this.conn.tx(async (conn) => {
      const accountId = key.account_id ?? ownAccountId(key.id);
      // A key's own account gets the wallet it was issued with (the key's mirrors it, `AccountsTable.setWallet`).
      if (key.account_id === undefined) await conn.run(Q.ownAccount, [accountId, key.id, key.wallet, key.created_at, key.created_by]);
      await conn.run(Q.insertKey, {
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
        account_id: accountId,
      });
      await conn.run(Q.insertSecret, [key.hash, key.id, key.prefix, key.created_at, null]);
    });
  }

  async addSecret(keyId: string, hash: string, prefix: string, at: number): Promise<void> {
    await this.conn.tx(async (conn) => {
      await conn.run(Q.insertSecret, [hash, keyId, prefix, at, null]);
      await conn.run(Q.prefix, [prefix, keyId]);
    });
  }

  async expireSecrets(keyId: string, at: number, now: number): Promise<void> {
    await this.conn.run(Q.expireSecrets, { at, keyId, now });
  }

  byId(id: string): Promise<KeyRow | undefined> {
    return this.conn.get<KeyRow>(Q.byId, [id]);
  }

  bySecret(hash: string, now: number): Promise<KeyRow | undefined> {
    return this.conn.get<KeyRow>(Q.bySecret, [hash, now]);
  }

  list(): Promise<KeyRow[]> {
    return this.conn.all<KeyRow>(Q.list);
  }

  async page(opts: { limit: number; after?: KeyPosition | null; status?: KeyStatus; now: number; scanLimit?: number }): Promise<KeyPage> {
    const { limit, now, status } = opts;
    const after = opts.after ? { at: opts.after.created_at, id: opts.after.id } : {};

    if (status === undefined || status === 'revoked') {
      const stmts = status === undefined ? Q.page.all : Q.page.byStatus;
      const rows = await this.conn.all<KeyRow>(opts.after ? stmts.after : stmts.first, {
        take: limit + 1,
        ...after,
        ...(status ? { status } : {}),
      });
      if (rows.length <= limit) return { rows, next: null };
      rows.length = limit;
      const last = rows[limit - 1]!;
      return { rows, next: { created_at: last.created_at, id: last.id } };
    }

    const take = Math.max(limit + 1, opts.scanLimit ?? KEY_PAGE_SCAN_LIMIT);
    return this.conn.tx(async (conn) => {
      // The positions are read a few at a time (twice a page, then four times as many as read
      // so far), up to `take`: a dense match decides the page from the first read.
      const positions: ScannedKey[] = [];
      for (;;) {
        const want = Math.min(take - positions.length, Math.max(2 * (limit + 1), 3 * positions.length));
        const last = positions[positions.length - 1];
        const from = last ? { at: last[0], id: last[1] } : after;
        const more = await conn.raw<ScannedKey>('at' in from ? Q.page.activeScan.after : Q.page.activeScan.first, { take: want, ...from });
        positions.push(...more);
        if (more.length < want || positions.length === take || scanPositions(positions, { take, limit, status, now }).next) break;
      }
      const { ids, next } = scanPositions(positions, { take, limit, status, now });
      if (ids.length === 0) return { rows: [], next };
      const byId = new Map((await conn.all<KeyRow>(Q.page.byIds, { ids: JSON.stringify(ids) })).map((r) => [r.id, r]));
      return { rows: ids.map((id) => byId.get(id)!), next };
    }, 'read');
  }

  liveSecrets(keyId: string, now: number): Promise<SecretRow[]> {
    return this.conn.all<SecretRow>(Q.secretsOf, [keyId, now]);
  }

  async liveSecretsOf(keyIds: readonly string[], now: number): Promise<Map<string, SecretRow[]>> {
    const out = new Map<string, SecretRow[]>();
    if (keyIds.length === 0) return out;
    // Each key's secrets come together, newest first.
    for (const row of await this.conn.all<SecretRow>(Q.liveSecretsOfMany, { ids: JSON.stringify(keyIds), now })) {
      const list = out.get(row.key_id);
      if (list) list.push(row);
      else out.set(row.key_id, [row]);
    }
    return out;
  }

  async revoke(id: string, at: number): Promise<boolean> {
    return (await this.conn.run(Q.revoke, [at, id])) === 1;
  }

  async setWallet(id: string, wallet: string | null): Promise<void> {
    await this.conn.tx(async (conn) => {
      await conn.run(Q.accountWallet, [wallet, id]);
      await conn.run(Q.wallet, [wallet, id]);
    });
  }

  async setLift(id: string, lift: { count: number; window_seconds: number; until: number } | null): Promise<void> {
    await this.conn.run(Q.lift, [lift?.count ?? null, lift?.window_seconds ?? null, lift?.until ?? null, id]);
  }

  async counts(now: number): Promise<{ total: number; active: number }> {
    return (await this.conn.get<{ total: number; active: number }>(Q.counts, [now]))!;
  }
}

/**
 * The ids of the keys with `status` at `now` among `take` scanned positions of active keys
 * (newest first), at most `limit`, and where the next page starts: after the page's last key
 * when one more match exists, after the last position examined when all `take` were scanned
 * without filling the page, else null.
 */
function scanPositions(
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

/**
 * Each key's account, as the settler posts to it: a key's account never changes, so what was
 * read once is kept for the store's life, shared by every transaction's tables. A batch fills
 * the keys it has not met yet with one statement (`fill`), on its own connection; the hot
 * statements that read a batch's calls stay without a join.
 *
 * A call whose key has no row (no gateway admits one; outcomes stored by hand, the benches')
 * posts to the account such a key would have had, `ownAccountId` (`ledger verify` maps it the
 * same way): the settler never stops on it, and the key's id is never reused.
 */
export class KeyAccounts {
  private readonly known = new Map<string, string>();

  /** Read the accounts of those of `keyIds` not known yet, on `conn`: one statement, or none. */
  async fill(conn: Conn, keyIds: Iterable<string>): Promise<void> {
    let missing: Set<string> | null = null;
    for (const id of keyIds) if (!this.known.has(id)) (missing ??= new Set()).add(id);
    if (missing === null) return;
    const rows = await conn.raw<[string, string]>(Q.accountsOf, { ids: JSON.stringify([...missing]) });
    for (const [id, account] of rows) this.known.set(id, account);
    for (const id of missing) if (!this.known.has(id)) this.known.set(id, ownAccountId(id));
  }

  /** The account of `keyId`, filled before (`fill`). Throws `InvariantError` for a key not filled. */
  of(keyId: string): string {
    const account = this.known.get(keyId);
    if (account === undefined) throw new InvariantError(`settlement: the account of key ${keyId} was not read`);
    return account;
  }
}
