/**
 * The gateway's in-memory view of what to enforce: flags, default limits, endpoints and key
 * hashes (in a compact table, key-table.ts), at one state version. Requests read it; only the sync client changes it, and only
 * through `SnapshotBuilder.finish()` (a whole new state) or `applyDelta()` (validated first,
 * then applied in one synchronous step, so a request never sees half an update).
 */
import { CodedError, InvariantError } from '../../protocol/coded-error';
import type { HttpMethod } from '../../protocol/endpoint';
import type { SchemaValidator } from '../../protocol/response-schema';
import {
  Delta,
  SnapshotBegin,
  SnapshotDigest,
  SnapshotKeys,
  type Flags,
  type Limits,
  type SnapshotEndpoint,
  type SnapshotKey,
} from '../../protocol/snapshot';
import { isDigestHex } from './digest-hex';
import { isKeysLine } from './key-line';
import { KeyTable, type KeyEntry } from './key-table';
import { responseSchemas } from './schema-cache';

export type { KeyEntry };

export interface EndpointEntry {
  id: string;
  upstream: URL;
  methods: ReadonlySet<string>;
  /** Value of the `Allow` header for 405 answers. */
  allow: string;
  timeoutMs: number;
  slaMs: number;
  price: number;
  premium: number;
  /**
   * `billing: 'prepaid'`: a keyed call whose key has an account is admitted only while this
   * gateway's budget for the account covers the premium (the handler's pay stage, budgets.ts).
   */
  prepaid: boolean;
  headers: Readonly<Record<string, string>>;
  /** Compiled response schema for 2xx JSON bodies (shared by endpoints with equal schemas, schema-cache.ts); null when the endpoint has none. */
  responseSchema: SchemaValidator | null;
}

/** A snapshot or delta the gateway refuses; it keeps the state it held. */
export class UpdateRejected extends CodedError {
  override readonly code = 'SVC_ERR_UPDATE_REJECTED';
}

function endpointEntry(e: SnapshotEndpoint): EndpointEntry {
  let upstream: URL;
  try {
    upstream = new URL(e.upstream);
  } catch {
    throw new UpdateRejected(`endpoint ${e.id}: upstream is not a URL`);
  }
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') {
    throw new UpdateRejected(`endpoint ${e.id}: upstream scheme ${upstream.protocol} not allowed`);
  }
  let responseSchema: SchemaValidator | null = null;
  if (e.response_schema !== undefined) {
    try {
      responseSchema = responseSchemas.validator(e.response_schema);
    } catch (err) {
      throw new UpdateRejected(`endpoint ${e.id}: ${(err as Error).message}`);
    }
  }
  const methods = new Set<string>(['POST', ...e.methods]);
  if (methods.has('GET')) methods.add('HEAD');
  return {
    id: e.id,
    upstream,
    methods,
    allow: [...methods].sort().join(', '),
    timeoutMs: e.timeout_ms,
    slaMs: e.sla_ms,
    price: e.price,
    premium: e.premium,
    prepaid: e.billing === 'prepaid',
    headers: Object.freeze({ ...e.headers }),
    responseSchema,
  };
}

/** A full snapshot's announced key count sizes the new table up to this many keys. */
const MAX_PRESIZED_KEYS = 1 << 22;

/** Key changes checked against the held keys, ready to apply without failing. */
interface KeyChanges {
  /** Ids to remove first: every upserted and every removed key. */
  drop: ReadonlySet<string>;
  /** Keys to add after, the last upsert of each id not removed. */
  put: readonly SnapshotKey[];
}

export class GatewayState {
  version: number;
  epoch: number;
  /** When this state (or its last delta) was applied, ms. */
  appliedAt: number;
  flags: Flags;
  limits: Limits;
  readonly endpoints: Map<string, EndpointEntry>;
  private readonly keys: KeyTable;
  /**
   * Some key came without its account: the state was sent to a gateway older than prepaid
   * billing (and persisted). A delta making an endpoint prepaid is refused on such a state (the
   * nack brings a full snapshot, with every key's account), or prepaid endpoints would admit
   * those keys' calls unchecked.
   */
  accountless = false;

  /** @param keys the key table to hold; a full snapshot fills it before the state is used. */
  constructor(
    init: { version: number; epoch: number; flags: Flags; limits: Limits; endpoints: SnapshotEndpoint[] },
    keys = new KeyTable(),
  ) {
    this.version = init.version;
    this.epoch = init.epoch;
    this.appliedAt = Date.now();
    this.flags = { ...init.flags };
    this.limits = init.limits;
    this.endpoints = new Map(init.endpoints.map((e) => [e.id, endpointEntry(e)]));
    this.keys = keys;
  }

  /** Keys held: those control sent as live, including any that have expired since (lookups refuse them). */
  get keyCount(): number {
    return this.keys.size;
  }

  /** The key behind a secret's hex SHA-256 if the secret and the key admit calls at `now`, else null. */
  lookup(hash: string, now: number): KeyEntry | null {
    return this.keys.lookupHex(hash, now);
  }

  /** Insert or replace a key and all its secrets; rejected (and nothing changed) when one of them belongs to another key. */
  putKey(k: SnapshotKey): void {
    this.applyKeys(this.planKeys([k], []));
  }

  removeKey(id: string): void {
    this.keys.remove(id);
  }

  /**
   * Apply a parsed, seal-checked delta. Everything that can fail is checked before the first
   * change, so a rejected delta leaves the state exactly as it was.
   */
  applyDelta(delta: Delta): void {
    if (delta.base !== this.version) throw new UpdateRejected(`delta base ${delta.base} does not match held version ${this.version}`);
    if (delta.version <= delta.base) throw new UpdateRejected(`delta version ${delta.version} is not after its base`);
    const upserts = (delta.endpoints_upsert ?? []).map(endpointEntry);
    const accountless = this.accountless || (delta.keys_upsert ?? []).some((k) => k.account === undefined);
    if (accountless && upserts.some((e) => e.prepaid))
      throw new UpdateRejected('a prepaid endpoint on a state whose keys came without accounts: a full snapshot is needed');
    const keys = this.planKeys(delta.keys_upsert ?? [], delta.keys_remove ?? []);
    this.accountless = accountless;
    for (const e of upserts) this.endpoints.set(e.id, e);
    for (const id of delta.endpoints_remove ?? []) this.endpoints.delete(id);
    this.applyKeys(keys);
    if (delta.flags) this.flags = { ...delta.flags };
    if (delta.limits) this.limits = delta.limits;
    this.version = delta.version;
    this.appliedAt = Date.now();
    this.retainSchemas();
  }

  /** Let the schema cache drop the validators no endpoint of this state uses (after it is built or a delta applied). */
  retainSchemas(): void {
    const inUse = new Set<SchemaValidator>();
    for (const e of this.endpoints.values()) if (e.responseSchema !== null) inUse.add(e.responseSchema);
    responseSchemas.retain(inUse);
  }

  /**
   * Upserts then removals, as a delta lists them, checked so that afterwards each secret
   * belongs to exactly one key; room for the result is reserved before anything changes.
   */
  private planKeys(upserts: readonly SnapshotKey[], removes: readonly string[]): KeyChanges {
    const latest = new Map<string, SnapshotKey>();
    for (const k of upserts) latest.set(k.id, k);
    const drop = new Set<string>(latest.keys());
    for (const id of removes) {
      drop.add(id);
      latest.delete(id);
    }
    const put = [...latest.values()];
    const claimed = new Set<string>();
    for (const k of put) {
      for (const { hash } of k.secrets) {
        if (!isDigestHex(hash)) throw new UpdateRejected(`key ${k.id}: a secret hash is not 64 lowercase hex digits`);
        if (claimed.has(hash)) throw new UpdateRejected(`a secret of key ${k.id} is listed twice in one update`);
        claimed.add(hash);
        const owner = this.keys.ownerOf(hash);
        if (owner !== null && !drop.has(owner)) throw new UpdateRejected(`a secret of key ${k.id} already belongs to key ${owner}`);
      }
    }
    this.keys.reserve(put.length, claimed.size);
    return { drop, put };
  }

  private applyKeys(changes: KeyChanges): void {
    for (const id of changes.drop) this.keys.remove(id);
    for (const k of changes.put) {
      const refused = this.keys.add(k);
      // planKeys() already ruled out every reason add() has to refuse.
      if (refused !== null) throw new InvariantError(`key table out of step with its checks: ${refused}`);
    }
  }
}

/**
 * Accumulates a full snapshot line by line, checking each line's shape and the final digest;
 * `finish()` yields the new state only when everything matched. Keys go straight into a table
 * sized from the announced count; a key id or secret listed twice rejects the snapshot.
 */
export class SnapshotBuilder {
  private readonly state: GatewayState;
  private readonly keys: KeyTable;
  private readonly digest = new SnapshotDigest();
  private keyLines = 0;

  constructor(beginLine: string) {
    const parsed = SnapshotBegin.safeParse(safeJson(beginLine));
    if (!parsed.success) throw new UpdateRejected(`bad snapshot_begin: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    this.keys = new KeyTable(Math.min(parsed.data.key_count, MAX_PRESIZED_KEYS));
    this.state = new GatewayState(parsed.data, this.keys);
    this.digest.update(beginLine);
  }

  get version(): number {
    return this.state.version;
  }

  addKeysLine(line: string): void {
    const value = safeJson(line);
    let keys: SnapshotKey[];
    if (isKeysLine(value)) {
      keys = value.keys;
    } else {
      const parsed = SnapshotKeys.safeParse(value);
      if (!parsed.success) throw new UpdateRejected(`bad keys line ${this.keyLines + 1}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      keys = parsed.data.keys;
    }
    for (const k of keys) {
      if (k.account === undefined) this.state.accountless = true;
      const refused = this.keys.add(k);
      if (refused !== null) throw new UpdateRejected(`bad keys line ${this.keyLines + 1}: ${refused}`);
    }
    this.digest.update(line);
    this.keyLines++;
  }

  finish(version: number, sha256: string): GatewayState {
    if (version !== this.state.version) throw new UpdateRejected(`snapshot_end version ${version} does not match ${this.state.version}`);
    const actual = this.digest.digest();
    if (actual !== sha256) throw new UpdateRejected(`snapshot digest mismatch: computed ${actual}, announced ${sha256}`);
    this.state.appliedAt = Date.now();
    this.state.retainSchemas();
    return this.state;
  }
}

export function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw new UpdateRejected('line is not valid JSON');
  }
}

export type { HttpMethod };
