/**
 * A check that a parsed `keys` line of a full snapshot has the shape `SnapshotKeys`
 * (protocol/snapshot.ts) accepts, without building a copy of it: a million keys pass here on
 * every full snapshot. It may refuse a line zod would accept, never the reverse; a refused
 * line goes to zod for the verdict and the message.
 */
import type { SnapshotKey } from '../../protocol/snapshot';
import { isDigestHex } from './digest-hex';

const KEY_ID_MAX = 64;
/** An account id's length bounds, as `SnapshotKey.account` has them (UTF-16 code units, as zod counts). */
const ACCOUNT_MIN = 1;
const ACCOUNT_MAX = 64;

type Fields = Record<string, unknown>;

export function isRecord(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own enumerable properties of `o`, counted without allocating. */
function fieldCount(o: object): number {
  let n = 0;
  for (const name in o) if (Object.prototype.hasOwnProperty.call(o, name)) n++;
  return n;
}

function isMs(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isPositive(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

function isRate(v: unknown, fields: number): v is Fields {
  return isRecord(v) && fieldCount(v) === fields && isPositive(v.count) && isPositive(v.window_seconds);
}

function isSecret(v: unknown): boolean {
  return isRecord(v) && fieldCount(v) === 2 && isDigestHex(v.hash) && (v.expires_at === null || isMs(v.expires_at));
}

function isAccount(v: unknown): boolean {
  return typeof v === 'string' && v.length >= ACCOUNT_MIN && v.length <= ACCOUNT_MAX;
}

/**
 * True when `v` is a key exactly as `SnapshotKey` would accept it: its six members, and a
 * seventh only when it is a valid `account` (each of the six is checked to be there, so six
 * members with `account` among them are one short).
 */
export function isKey(v: unknown): v is SnapshotKey {
  if (!isRecord(v)) return false;
  const members = fieldCount(v);
  if (members === 7 ? !isAccount(v.account) : members !== 6) return false;
  const { id, secrets, expires_at, endpoints, limit, lift } = v;
  if (typeof id !== 'string' || id.length < 1 || id.length > KEY_ID_MAX) return false;
  if (!Array.isArray(secrets) || secrets.length === 0) return false;
  for (const s of secrets) if (!isSecret(s)) return false;
  if (expires_at !== null && !isMs(expires_at)) return false;
  if (!Array.isArray(endpoints)) return false;
  for (const e of endpoints) if (typeof e !== 'string') return false;
  if (limit !== null && !isRate(limit, 2)) return false;
  if (lift !== null && !(isRate(lift, 3) && isMs(lift.until))) return false;
  return true;
}

/** True when `v` is a `keys` line exactly as `SnapshotKeys` would accept it. */
export function isKeysLine(v: unknown): v is { type: 'keys'; keys: SnapshotKey[] } {
  if (!isRecord(v) || fieldCount(v) !== 2 || v.type !== 'keys' || !Array.isArray(v.keys)) return false;
  for (const k of v.keys) if (!isKey(k)) return false;
  return true;
}
