/**
 * Keys and their secrets. Only SHA-256 hashes of secrets are stored (docs/design.md §5); the
 * display `prefix` is the first characters of the key, useless for authentication.
 */
import type { KeyStatus } from '../../protocol/admin';

export interface KeyRow {
  id: string;
  name: string | null;
  prefix: string;
  status: 'active' | 'revoked';
  created_at: number;
  created_by: string;
  expires_at: number | null;
  revoked_at: number | null;
  /** The payout wallet of the key's account, mirrored here (migration 21; `AccountsTable.setWallet`). */
  wallet: string | null;
  endpoints: string;
  limit_count: number | null;
  limit_window_s: number | null;
  lift_count: number | null;
  lift_window_s: number | null;
  lift_until: number | null;
  application_id: string | null;
  /** The key's account (migration 20): set at issue, never changed. */
  account_id: string;
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
  /** The wallet of the key's own account (a key issued into a shared one takes the account's: pass it). */
  wallet: string | null;
  endpoints: string[];
  limit: { count: number; window_seconds: number } | null;
  application_id: string | null;
  /** The key's account; without one the key gets an account of its own (`ownAccountId`), named after it. */
  account_id?: string;
}

/**
 * The id of the account a key issued without one gets, as migration 20 gave every key of an
 * install from before accounts: `acc_` and the key id's random part (`key_…`), or the whole id.
 */
export const ownAccountId = (keyId: string): string => `acc_${keyId.startsWith('key_') ? keyId.slice(4) : keyId}`;

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

export interface KeysTable {
  /** Insert a new key and its first secret. */
  insert(key: NewKey): Promise<void>;
  /** Add a secret to an existing key (rotation), which takes its prefix. */
  addSecret(keyId: string, hash: string, prefix: string, at: number): Promise<void>;
  /** Let every live secret of `keyId` expire at `at` (rotation grace or revocation); never extends one already counting down. */
  expireSecrets(keyId: string, at: number, now: number): Promise<void>;
  byId(id: string): Promise<KeyRow | undefined>;
  /** The key whose live secret has SHA-256 `hash` (hex) at `now`, whatever the key's own status. */
  bySecret(hash: string, now: number): Promise<KeyRow | undefined>;
  /** Every key, newest first. Reads the whole table: for tests and small tools, not the API. */
  list(): Promise<KeyRow[]>;
  /**
   * One page of keys, newest first (`created_at`, then `id`, both descending), after `after`
   * when given, with status `status` (as {@link keyStatus} decides it at `now`) when given.
   * Keyset pagination on an index: the cost of a page does not grow with how deep it is.
   *
   * `revoked` (and no filter) is a range of the index. `active` and `expired` depend on the
   * clock, so their page scans at most `max(limit + 1, scanLimit)` positions of the covering
   * index (then reads the keys it picked, in one read transaction) and may come back short
   * (even empty) with a `next` to go on from. `next` is null only when nothing is left.
   */
  page(opts: { limit: number; after?: KeyPosition | null; status?: KeyStatus; now: number; scanLimit?: number }): Promise<KeyPage>;
  /** The live secrets of one key at `now`, newest first. */
  liveSecrets(keyId: string, now: number): Promise<SecretRow[]>;
  /** Live secrets of many keys in one query, by key id (newest secret first). */
  liveSecretsOf(keyIds: readonly string[], now: number): Promise<Map<string, SecretRow[]>>;
  /** Revoke an active key; answers whether it was active. */
  revoke(id: string, at: number): Promise<boolean>;
  /** Attach (null: detach) the payout wallet of key `id`'s account, as `AccountsTable.setWallet` does. */
  setWallet(id: string, wallet: string | null): Promise<void>;
  setLift(id: string, lift: { count: number; window_seconds: number; until: number } | null): Promise<void>;
  /** How many keys there are, and how many of them are active at `now`. */
  counts(now: number): Promise<{ total: number; active: number }>;
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
