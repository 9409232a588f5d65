/**
 * Keys and their secrets. Only SHA-256 hashes of secrets are stored (DESIGN §5); the
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

export class KeysTable {
  private readonly insertKey;
  private readonly insertSecretStmt;
  private readonly byIdStmt;
  private readonly listStmt;
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
    this.insertSecretStmt = db.prepare(
      `INSERT INTO key_secrets (hash, key_id, prefix, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
    );
    this.byIdStmt = db.prepare(`SELECT * FROM keys WHERE id = ?`);
    this.listStmt = db.prepare(`SELECT * FROM keys ORDER BY created_at DESC, id`);
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
    this.insertKey.run({
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
    });
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

  list(): KeyRow[] {
    return this.listStmt.all() as KeyRow[];
  }

  liveSecrets(keyId: string, now: number): SecretRow[] {
    return this.secretsOfStmt.all(keyId, now) as SecretRow[];
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

export function keyStatus(row: KeyRow, now: number): KeyStatus {
  if (row.status === 'revoked') return 'revoked';
  if (row.expires_at !== null && row.expires_at <= now) return 'expired';
  return 'active';
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
    limit:
      row.limit_count !== null && row.limit_window_s !== null
        ? { count: row.limit_count, window_seconds: row.limit_window_s }
        : null,
    lift:
      liftLive && row.lift_count !== null && row.lift_window_s !== null
        ? { count: row.lift_count, window_seconds: row.lift_window_s, until: iso(row.lift_until)! }
        : null,
    application_id: row.application_id,
    secrets:
      status === 'active'
        ? secrets.map((s) => ({ prefix: s.prefix, created_at: iso(s.created_at)!, expires_at: iso(s.expires_at) }))
        : [],
  };
}
