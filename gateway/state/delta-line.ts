/**
 * A check that a parsed delta line has the shape `Delta` (protocol/snapshot.ts) accepts, for
 * deltas that change keys and nothing else: a key issued, revoked, rotated or restricted, which
 * is nearly every delta a gateway applies, with the accounts a deposit funded (`accounts_funded`). Such a delta takes no zod pass and no copy; any other
 * (flags, limits, endpoints), and any line this check refuses, goes to zod for the verdict and
 * the message. Like `isKeysLine` it may refuse a line zod would accept, never the reverse.
 */
import { Delta } from '../../protocol/snapshot';
import { isDigestHex } from './digest-hex';
import { isKey, isRecord } from './key-line';

/** The members a keys-only delta may have; `keys_upsert`, `keys_remove` and `accounts_funded` may be absent. */
const KEY_DELTA_MEMBERS: ReadonlySet<string> = new Set([
  'type',
  'version',
  'base',
  'keys_upsert',
  'keys_remove',
  'accounts_funded',
  'sha256',
]);

function isIntAtLeast(v: unknown, min: number): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min;
}

/** True when `v` is absent or an array of strings. */
function isStringsOrAbsent(v: unknown): boolean {
  if (v === undefined) return true;
  if (!Array.isArray(v)) return false;
  for (const s of v) if (typeof s !== 'string') return false;
  return true;
}

/** True when `v` is a delta that changes only keys, exactly as `Delta` would accept it. */
export function isKeyDelta(v: unknown): v is Delta {
  if (!isRecord(v) || v.type !== 'delta') return false;
  for (const name in v) if (!Object.prototype.hasOwnProperty.call(v, name) || !KEY_DELTA_MEMBERS.has(name)) return false;
  if (!isIntAtLeast(v.version, 2) || !isIntAtLeast(v.base, 1) || !isDigestHex(v.sha256)) return false;
  const { keys_upsert: upserts, keys_remove: removes } = v;
  if (upserts !== undefined) {
    if (!Array.isArray(upserts)) return false;
    for (const k of upserts) if (!isKey(k)) return false;
  }
  return isStringsOrAbsent(removes) && isStringsOrAbsent(v.accounts_funded);
}

/** A parsed delta line as a `Delta`: through the check above when it passes, else through zod. */
export function parseDelta(value: unknown): { success: true; data: Delta } | { success: false; message: string } {
  if (isKeyDelta(value)) return { success: true, data: value };
  const parsed = Delta.safeParse(value);
  return parsed.success ? { success: true, data: parsed.data } : { success: false, message: parsed.error.issues[0]?.message ?? 'invalid' };
}
