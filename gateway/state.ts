/**
 * The gateway's in-memory view of what to enforce: flags, default limits, endpoints and key
 * hashes, at one state version. Requests read it; only the sync client changes it, and only
 * through `SnapshotBuilder.finish()` (a whole new state) or `applyDelta()` (validated first,
 * then applied in one synchronous step, so a request never sees half an update).
 */
import type { HttpMethod } from '../protocol/admin';
import { compileSchema, type SchemaValidator } from '../protocol/response-schema';
import {
  Delta,
  SnapshotBegin,
  SnapshotDigest,
  SnapshotKeys,
  type Flags,
  type Limits,
  type SnapshotEndpoint,
  type SnapshotKey,
} from '../protocol/snapshot';

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
  headers: Readonly<Record<string, string>>;
  /** Compiled response schema for 2xx JSON bodies; null when the endpoint has none. */
  responseSchema: SchemaValidator | null;
}

export interface KeyEntry {
  id: string;
  /** ms since epoch; Infinity when the key does not expire. */
  expiresAt: number;
  /** null = every endpoint. */
  endpoints: ReadonlySet<string> | null;
  limit: { count: number; windowSeconds: number } | null;
  lift: { count: number; windowSeconds: number; until: number } | null;
  hashes: string[];
}

export interface SecretEntry {
  key: KeyEntry;
  /** ms since epoch; Infinity when the secret does not expire on its own. */
  expiresAt: number;
}

export class UpdateRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpdateRejected';
  }
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
      responseSchema = compileSchema(e.response_schema);
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
    headers: Object.freeze({ ...e.headers }),
    responseSchema,
  };
}

function keyEntry(k: SnapshotKey): KeyEntry {
  return {
    id: k.id,
    expiresAt: k.expires_at ?? Infinity,
    endpoints: k.endpoints.length === 0 ? null : new Set(k.endpoints),
    limit: k.limit ? { count: k.limit.count, windowSeconds: k.limit.window_seconds } : null,
    lift: k.lift ? { count: k.lift.count, windowSeconds: k.lift.window_seconds, until: k.lift.until } : null,
    hashes: k.secrets.map((s) => s.hash),
  };
}

export class GatewayState {
  version: number;
  epoch: number;
  /** When this state (or its last delta) was applied, ms. */
  appliedAt: number;
  flags: Flags;
  limits: Limits;
  readonly endpoints: Map<string, EndpointEntry>;
  readonly keys: Map<string, KeyEntry>;
  readonly secrets: Map<string, SecretEntry>;

  constructor(init: { version: number; epoch: number; flags: Flags; limits: Limits; endpoints: SnapshotEndpoint[] }) {
    this.version = init.version;
    this.epoch = init.epoch;
    this.appliedAt = Date.now();
    this.flags = { ...init.flags };
    this.limits = init.limits;
    this.endpoints = new Map(init.endpoints.map((e) => [e.id, endpointEntry(e)]));
    this.keys = new Map();
    this.secrets = new Map();
  }

  /** The key behind a secret's hash if it admits calls at `now`, else null. */
  lookup(hash: string, now: number): KeyEntry | null {
    const secret = this.secrets.get(hash);
    if (secret === undefined || secret.expiresAt <= now || secret.key.expiresAt <= now) return null;
    return secret.key;
  }

  /** Insert or replace a key and all its secrets. */
  putKey(k: SnapshotKey): void {
    this.removeKey(k.id);
    const entry = keyEntry(k);
    this.keys.set(entry.id, entry);
    for (const s of k.secrets) this.secrets.set(s.hash, { key: entry, expiresAt: s.expires_at ?? Infinity });
  }

  removeKey(id: string): void {
    const old = this.keys.get(id);
    if (!old) return;
    for (const hash of old.hashes) this.secrets.delete(hash);
    this.keys.delete(id);
  }

  /**
   * Apply a parsed, seal-checked delta. Everything that can fail is checked before the first
   * change, so a rejected delta leaves the state exactly as it was.
   */
  applyDelta(delta: Delta): void {
    if (delta.base !== this.version) throw new UpdateRejected(`delta base ${delta.base} does not match held version ${this.version}`);
    if (delta.version <= delta.base) throw new UpdateRejected(`delta version ${delta.version} is not after its base`);
    const upserts = (delta.endpoints_upsert ?? []).map(endpointEntry);
    for (const e of upserts) this.endpoints.set(e.id, e);
    for (const id of delta.endpoints_remove ?? []) this.endpoints.delete(id);
    for (const k of delta.keys_upsert ?? []) this.putKey(k);
    for (const id of delta.keys_remove ?? []) this.removeKey(id);
    if (delta.flags) this.flags = { ...delta.flags };
    if (delta.limits) this.limits = delta.limits;
    this.version = delta.version;
    this.appliedAt = Date.now();
  }
}

/**
 * Accumulates a full snapshot line by line, checking each line's shape and the final digest;
 * `finish()` yields the new state only when everything matched.
 */
export class SnapshotBuilder {
  private readonly state: GatewayState;
  private readonly digest = new SnapshotDigest();
  private keyLines = 0;

  constructor(beginLine: string) {
    const parsed = SnapshotBegin.safeParse(safeJson(beginLine));
    if (!parsed.success) throw new UpdateRejected(`bad snapshot_begin: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    this.state = new GatewayState(parsed.data);
    this.digest.update(beginLine);
  }

  get version(): number {
    return this.state.version;
  }

  addKeysLine(line: string): void {
    const parsed = SnapshotKeys.safeParse(safeJson(line));
    if (!parsed.success) throw new UpdateRejected(`bad keys line ${this.keyLines + 1}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    for (const k of parsed.data.keys) this.state.putKey(k);
    this.digest.update(line);
    this.keyLines++;
  }

  finish(version: number, sha256: string): GatewayState {
    if (version !== this.state.version) throw new UpdateRejected(`snapshot_end version ${version} does not match ${this.state.version}`);
    const actual = this.digest.digest();
    if (actual !== sha256) throw new UpdateRejected(`snapshot digest mismatch: computed ${actual}, announced ${sha256}`);
    this.state.appliedAt = Date.now();
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
