/**
 * Every live key the gateway enforces, held outside the JavaScript heap: a million keys cost
 * about 100 bytes each and leave the garbage collector nothing to trace.
 *
 * Each secret is one 64-byte record in a growable `ArrayBuffer`:
 *
 * | bytes | holds                                                                         |
 * |-------|-------------------------------------------------------------------------------|
 * | 0–31  | the secret's SHA-256, binary                                                  |
 * | 32–39 | float64: admits calls until this ms (the earlier of secret and key expiry)    |
 * | 40–43 | uint32: a key in the side list: 1 + its index there; a plain key: 0, or with an |
 * |       | account `ACCOUNT_TAG` + the account's index in the table's interned accounts  |
 * | 44    | a plain key's id length in UTF-8 bytes                                        |
 * | 45–63 | a plain key's id                                                              |
 *
 * A plain key (one secret with no expiry of its own, no endpoint list, limit or lift, an id
 * of at most {@link INLINE_ID_BYTES} bytes, with or without an account) is a single record: every
 * key control issues, until it is rotated or restricted. A key's account (prepaid billing) is
 * held once per distinct account string, by index: a million keys on a thousand accounts keep a
 * thousand strings, and a plain key's record names its account in the link word's free bits. Any other key keeps its `KeyEntry` in a side list and
 * has one record per secret. Two {@link SlotTable}s index the records: by the digest's first
 * 32 bits (every record) and by a hash of the key id (each key's first record). Digests are
 * SHA-256 outputs of random keys, so their bits are uniform and no caller can steer them.
 */
import type { SnapshotKey } from '../../protocol/snapshot';
import { DIGEST_BYTES, decodeDigestHex } from './digest-hex';
import { SlotTable } from './slot-table';

/** What a request learns about the key behind its bearer. */
export interface KeyEntry {
  id: string;
  /** ms since epoch; Infinity when the key does not expire. */
  expiresAt: number;
  /** null = every endpoint. */
  endpoints: ReadonlySet<string> | null;
  limit: { count: number; windowSeconds: number } | null;
  lift: { count: number; windowSeconds: number; until: number } | null;
  /** The key's account (`acc_…`), whose money prepaid endpoints spend; null when control sent none. */
  account: string | null;
}

const RECORD_BYTES = 64;
const RECORD_WORDS = RECORD_BYTES / 4;
const RECORD_FLOATS = RECORD_BYTES / 8;
const DIGEST_WORDS = DIGEST_BYTES / 4;
/** Float64 index of `until` within a record. */
const UNTIL = 4;
/** Uint32 index of the side-list link within a record. */
const LINK = 10;
/**
 * In a plain key's link word: the bit saying the rest is the index of its account. Side-list
 * links stay below it (a side list of 2^31 keys would not fit in memory).
 */
const ACCOUNT_TAG = 0x8000_0000;
/** Byte offsets of a plain key's id length and id within a record. */
const ID_LENGTH = 44;
const ID_AT = 45;
/** Longest key id, in UTF-8 bytes, stored inside a plain key's record. @default 19 */
export const INLINE_ID_BYTES = RECORD_BYTES - ID_AT;
/** Records in the smallest arena. */
const MIN_RECORDS = 16;
/**
 * Records allocated per expected key: room for the second secret of keys in a rotation's
 * grace. Pages no record has touched take no physical memory.
 */
const RECORDS_PER_EXPECTED_KEY = 1.125;

interface SideKey {
  entry: KeyEntry;
  /** The key's records, first one (the one indexed by id) first. */
  records: number[];
}

/** FNV-1a over UTF-16 code units, then the murmur3 finaliser so the low bits mix well. */
function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function keyEntry(
  id: string,
  expiresAt: number,
  endpoints: ReadonlySet<string> | null,
  limit: KeyEntry['limit'],
  lift: KeyEntry['lift'],
  account: string | null,
): KeyEntry {
  return { id, expiresAt, endpoints, limit, lift, account };
}

/** A link word that names a key in the side list (not 0, not a plain key's account). */
function isSideLink(link: number): boolean {
  return link !== 0 && link < ACCOUNT_TAG;
}

function sideEntry(k: SnapshotKey): KeyEntry {
  return keyEntry(
    k.id,
    k.expires_at ?? Infinity,
    k.endpoints.length === 0 ? null : new Set(k.endpoints),
    k.limit ? { count: k.limit.count, windowSeconds: k.limit.window_seconds } : null,
    k.lift ? { count: k.lift.count, windowSeconds: k.lift.window_seconds, until: k.lift.until } : null,
    k.account ?? null,
  );
}

function isPlain(k: SnapshotKey): boolean {
  return (
    k.secrets.length === 1 &&
    k.secrets[0]!.expires_at === null &&
    k.endpoints.length === 0 &&
    k.limit === null &&
    k.lift === null &&
    k.id.length <= INLINE_ID_BYTES &&
    Buffer.byteLength(k.id) <= INLINE_ID_BYTES
  );
}

export class KeyTable {
  private bytes!: Buffer;
  private words!: Uint32Array;
  private floats!: Float64Array;
  /** Records handed out so far, free ones included. */
  private used = 0;
  private freeHead = -1;
  private freeCount = 0;
  private readonly side: (SideKey | undefined)[] = [];
  private readonly freeSide: number[] = [];
  /**
   * Every account a plain key of this table named, once each; never shrinks (a full snapshot
   * builds a new table), so an index in a record stays valid.
   */
  private readonly accounts: string[] = [];
  private readonly accountIndex = new Map<string, number>();
  private readonly byDigest: SlotTable;
  private readonly byId: SlotTable;
  /** The digest being looked for, word-aligned. */
  private readonly probe = new Uint32Array(DIGEST_WORDS);
  private readonly probeBytes = new Uint8Array(this.probe.buffer);

  /** @param expectedKeys keys to make room for up front; the table grows past it as needed. */
  constructor(expectedKeys = 0) {
    this.allocate(Math.max(MIN_RECORDS, Math.ceil(expectedKeys * RECORDS_PER_EXPECTED_KEY)));
    this.byDigest = new SlotTable(expectedKeys);
    this.byId = new SlotTable(expectedKeys);
  }

  /** Keys held. */
  get size(): number {
    return this.byId.size;
  }

  /**
   * The key whose secret has this SHA-256 (64 lowercase hex digits), if the secret and the key
   * admit calls at `now`; null for anything else, including what is not 64 lowercase hex digits.
   */
  lookupHex(hash: string, now: number): KeyEntry | null {
    return this.probeHex(hash) ? this.admitted(now) : null;
  }

  /** The key whose secret is in the probe, if both admit calls at `now`. */
  private admitted(now: number): KeyEntry | null {
    const r = this.findDigest();
    if (r === -1) return null;
    const until = this.floats[r * RECORD_FLOATS + UNTIL]!;
    if (until <= now) return null;
    const link = this.words[r * RECORD_WORDS + LINK]!;
    if (isSideLink(link)) return this.side[link - 1]!.entry;
    return keyEntry(this.inlineId(r), until, null, null, null, link === 0 ? null : this.accounts[link - ACCOUNT_TAG]!);
  }

  /** The id of the key holding the secret with this hex SHA-256, or null. */
  ownerOf(hash: string): string | null {
    if (!this.probeHex(hash)) return null;
    const r = this.findDigest();
    return r === -1 ? null : this.idAt(r);
  }

  /**
   * Add a key that is not held. Returns null when added, else why not (its id is held, or
   * one of its secrets is listed twice or already belongs to a key); then nothing changed.
   */
  add(k: SnapshotKey): string | null {
    if (this.findId(k.id) !== -1) return `key ${k.id} is listed twice`;
    const secrets = k.secrets;
    for (let i = 0; i < secrets.length; i++) {
      if (!this.probeHex(secrets[i]!.hash)) return `key ${k.id}: a secret hash is not 64 lowercase hex digits`;
      for (let j = 0; j < i; j++) if (secrets[j]!.hash === secrets[i]!.hash) return `key ${k.id} lists a secret twice`;
      const r = this.findDigest();
      if (r !== -1) return `a secret of key ${k.id} already belongs to key ${this.idAt(r)}`;
    }
    const plain = isPlain(k);
    const side: SideKey | null = plain ? null : { entry: sideEntry(k), records: [] };
    const link = side !== null ? this.claimSide(side) + 1 : k.account === undefined ? 0 : ACCOUNT_TAG + this.intern(k.account);
    const keyUntil = k.expires_at ?? Infinity;
    for (let i = 0; i < secrets.length; i++) {
      // With one secret the probe still holds its digest from the checks above.
      if (secrets.length > 1) this.probeHex(secrets[i]!.hash);
      const r = this.claim();
      const w = r * RECORD_WORDS;
      this.words.set(this.probe, w);
      this.floats[r * RECORD_FLOATS + UNTIL] = Math.min(secrets[i]!.expires_at ?? Infinity, keyUntil);
      this.words[w + LINK] = link;
      if (plain) this.bytes[r * RECORD_BYTES + ID_LENGTH] = this.bytes.write(k.id, r * RECORD_BYTES + ID_AT, INLINE_ID_BYTES, 'utf8');
      this.byDigest.insert(this.words[w]!, r);
      if (i === 0) this.byId.insert(idHash(k.id), r);
      side?.records.push(r);
    }
    return null;
  }

  /** Remove a key and every secret of it; false when it is not held. */
  remove(id: string): boolean {
    const r = this.findId(id);
    if (r === -1) return false;
    this.byId.remove(idHash(id), r);
    const link = this.words[r * RECORD_WORDS + LINK]!;
    if (!isSideLink(link)) {
      this.release(r);
      return true;
    }
    for (const record of this.side[link - 1]!.records) this.release(record);
    this.side[link - 1] = undefined;
    this.freeSide.push(link - 1);
    return true;
  }

  /** Make room for `keys` more keys holding `secrets` secrets in all, so adding them cannot allocate. */
  reserve(keys: number, secrets: number): void {
    const needed = this.used + Math.max(0, secrets - this.freeCount);
    const capacity = this.words.length / RECORD_WORDS;
    if (needed > capacity) this.allocate(Math.max(needed, capacity * 2));
    this.byDigest.reserve(secrets);
    this.byId.reserve(keys);
  }

  private findDigest(): number {
    const q = this.probe;
    const w = this.words;
    const h = q[0]!;
    for (let s = this.byDigest.first(h); s !== -1; s = this.byDigest.next(s, h)) {
      const r = this.byDigest.ref(s);
      const o = r * RECORD_WORDS;
      if (
        w[o + 1] === q[1] &&
        w[o + 2] === q[2] &&
        w[o + 3] === q[3] &&
        w[o + 4] === q[4] &&
        w[o + 5] === q[5] &&
        w[o + 6] === q[6] &&
        w[o + 7] === q[7]
      ) {
        return r;
      }
    }
    return -1;
  }

  private findId(id: string): number {
    const h = idHash(id);
    for (let s = this.byId.first(h); s !== -1; s = this.byId.next(s, h)) {
      const r = this.byId.ref(s);
      if (this.idAt(r) === id) return r;
    }
    return -1;
  }

  private probeHex(hash: string): boolean {
    return decodeDigestHex(hash, this.probeBytes);
  }

  private idAt(r: number): string {
    const link = this.words[r * RECORD_WORDS + LINK]!;
    return isSideLink(link) ? this.side[link - 1]!.entry.id : this.inlineId(r);
  }

  private inlineId(r: number): string {
    const at = r * RECORD_BYTES;
    return this.bytes.toString('utf8', at + ID_AT, at + ID_AT + this.bytes[at + ID_LENGTH]!);
  }

  private claim(): number {
    if (this.freeHead !== -1) {
      const r = this.freeHead;
      this.freeHead = this.words[r * RECORD_WORDS + LINK]! - 1;
      this.freeCount--;
      return r;
    }
    if (this.used === this.words.length / RECORD_WORDS) this.allocate(this.used * 2);
    return this.used++;
  }

  private release(r: number): void {
    this.byDigest.remove(this.words[r * RECORD_WORDS]!, r);
    this.bytes.fill(0, r * RECORD_BYTES, (r + 1) * RECORD_BYTES);
    this.words[r * RECORD_WORDS + LINK] = this.freeHead + 1;
    this.freeHead = r;
    this.freeCount++;
  }

  /** The index of `account` among the table's accounts, added on first sight. */
  private intern(account: string): number {
    let i = this.accountIndex.get(account);
    if (i === undefined) {
      i = this.accounts.push(account) - 1;
      this.accountIndex.set(account, i);
    }
    return i;
  }

  private claimSide(key: SideKey): number {
    const i = this.freeSide.pop() ?? this.side.length;
    this.side[i] = key;
    return i;
  }

  private allocate(records: number): void {
    const buffer = new ArrayBuffer(records * RECORD_BYTES);
    const bytes = Buffer.from(buffer);
    if (this.used > 0) this.bytes.copy(bytes, 0, 0, this.used * RECORD_BYTES);
    this.bytes = bytes;
    this.words = new Uint32Array(buffer);
    this.floats = new Float64Array(buffer);
  }
}
