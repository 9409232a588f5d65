/**
 * Builds what gateways enforce: full snapshots (streamed from a consistent read view) and
 * deltas between two state versions (from the `state_changes` record of each write).
 */
import { createHash } from 'node:crypto';
import {
  SNAPSHOT_KEYS_PER_LINE,
  SnapshotDigest,
  sealDelta,
  type Delta,
  type Limits,
  type SnapshotEndpoint,
  type SnapshotKey,
} from '../../protocol/snapshot';
import { CodedError } from '../../protocol/coded-error';
import { silentLogger, type Logger } from '../../runtime/log';
import type { ClusterTable, Store } from '../store';
import { parseEndpointRow, type EndpointRow } from '../store/endpoints';

export function snapshotEndpoint(row: EndpointRow): SnapshotEndpoint {
  const e = parseEndpointRow(row);
  const out: SnapshotEndpoint = {
    id: e.id,
    upstream: e.upstream,
    methods: e.methods,
    timeout_ms: e.timeout_ms,
    sla_ms: e.sla_ms,
    price: e.price,
    premium: e.premium,
    headers: e.headers,
  };
  // Only endpoints with a schema carry the field, so the others' snapshot lines are unchanged.
  if (e.response_schema !== null) out.response_schema = e.response_schema;
  // Likewise only prepaid endpoints carry `billing`: postpaid is what a gateway assumes, so a
  // gateway from before prepaid billing reads every snapshot without one unchanged.
  if (e.billing === 'prepaid') out.billing = 'prepaid';
  return out;
}

const LIMITS_FINGERPRINT = 'limits_fingerprint';

/**
 * Record the configured default limits as part of the state: when they differ from what the
 * store last saw, bump the state version so connected gateways get them as a delta.
 */
export async function recordLimits(store: Store, limits: Limits, now: number): Promise<void> {
  const fp = parseInt(createHash('sha256').update(JSON.stringify(limits)).digest('hex').slice(0, 12), 16);
  if ((await store.meta(LIMITS_FINGERPRINT)) === fp) return;
  await store.mutate(
    { actor: 'control', now },
    { action: 'limits.configure', detail: { ...limits }, changes: [{ kind: 'limits', entity: '*' }] },
    (tx) => tx.setMeta(LIMITS_FINGERPRINT, fp),
  );
}

/**
 * Stream a full snapshot as lines to `write` (which should respect backpressure). Reads run
 * on a separate connection in one read transaction, so the result is exactly one version.
 */
export async function writeSnapshot(
  store: Store,
  limits: Limits,
  now: number,
  write: (line: string) => Promise<void>,
  epoch: number,
  legacy = false,
): Promise<{ version: number; sha256: string }> {
  const reader = store.openSnapshotReader();
  try {
    const version = await reader.begin();
    const digest = new SnapshotDigest();
    const emit = async (line: string) => {
      digest.update(line);
      await write(line);
    };
    let endpoints = (await reader.endpoints()).map((row) => snapshotEndpoint(row as unknown as EndpointRow));
    if (legacy) endpoints = endpoints.map(legacyEndpoint);
    await emit(
      JSON.stringify({
        type: 'snapshot_begin',
        version,
        epoch,
        generated_at: new Date(now).toISOString(),
        flags: await reader.flags(),
        limits,
        endpoints,
        key_count: await reader.liveKeyCount(now),
      }),
    );
    for (
      let keys = await reader.nextPage(SNAPSHOT_KEYS_PER_LINE, now);
      keys !== null;
      keys = await reader.nextPage(SNAPSHOT_KEYS_PER_LINE, now)
    ) {
      if (keys.length > 0) await emit(JSON.stringify({ type: 'keys', keys: legacy ? keys.map(legacyKey) : keys }));
    }
    const sha256 = digest.digest();
    await write(JSON.stringify({ type: 'snapshot_end', version, sha256 }));
    return { version, sha256 };
  } finally {
    await reader.end();
  }
}

/**
 * The delta taking a gateway from `from` to the current version, sealed as one line; null
 * when history does not reach back to `from` (send a full snapshot instead).
 */
export function buildDelta(
  store: Store,
  limits: Limits,
  from: number,
  now: number,
  legacy = false,
): Promise<{ line: string; sha256: string; version: number } | null> {
  // Read the version and the changes in one transaction so they agree.
  return store.read(async (tx) => {
    const to = await tx.version();
    const changes = await tx.changesSince(from, to);
    if (changes === null) return null;
    const body: Omit<Delta, 'sha256'> = { type: 'delta', version: to, base: from };
    for (const change of changes) {
      switch (change.kind) {
        case 'flags':
          body.flags = await tx.flags.values();
          break;
        case 'limits':
          body.limits = limits;
          break;
        case 'endpoint': {
          const row = await tx.endpoints.byId(change.entity);
          if (row) (body.endpoints_upsert ??= []).push(legacy ? legacyEndpoint(snapshotEndpoint(row)) : snapshotEndpoint(row));
          else (body.endpoints_remove ??= []).push(change.entity);
          break;
        }
        case 'key': {
          const key = await tx.liveKey(change.entity, now);
          if (key) (body.keys_upsert ??= []).push(legacy ? legacyKey(key) : key);
          else (body.keys_remove ??= []).push(change.entity);
          break;
        }
        case 'account':
          if (!legacy) (body.accounts_funded ??= []).push(change.entity);
          break;
      }
    }
    return { ...sealDelta(body), version: to };
  });
}

/** Random per-database identifier, so a gateway never applies deltas from another database. */
export async function storeEpoch(store: Store): Promise<number> {
  let epoch = await store.meta('epoch');
  if (epoch === null) {
    epoch = Math.floor(Math.random() * 2 ** 48);
    await store.setMeta('epoch', epoch);
  }
  return epoch;
}

/**
 * A key as a gateway older than prepaid billing takes it: without its account (its parser
 * refuses members it does not know; such a gateway holds no budgets).
 */
export function legacyKey(key: SnapshotKey): SnapshotKey {
  const { account: _account, ...rest } = key;
  return rest;
}

/** An endpoint as a gateway older than prepaid billing takes it: without `billing` (it admits every call as postpaid). */
export function legacyEndpoint(endpoint: SnapshotEndpoint): SnapshotEndpoint {
  if (endpoint.billing === undefined) return endpoint;
  const { billing: _billing, ...rest } = endpoint;
  return rest;
}

/** Each delta to the current version built once, however many gateways are behind by the same versions. */
export class DeltaCache {
  private deltas = new Map<number, Promise<{ line: string; sha256: string; version: number } | null>>();
  private version = -1;

  constructor(
    private readonly store: Store,
    private readonly limits: Limits,
    /** Deltas for gateways older than prepaid billing (`legacyKey`, `legacyEndpoint`, no `accounts_funded`). */
    private readonly legacy = false,
  ) {}

  /** `buildDelta` from `from` to the current version, built at most once per version. */
  async get(from: number, now: number): Promise<{ line: string; sha256: string; version: number } | null> {
    const current = await this.store.version();
    if (this.version !== current) {
      this.deltas = new Map();
      this.version = current;
    }
    let delta = this.deltas.get(from);
    if (delta === undefined) {
      delta = buildDelta(this.store, this.limits, from, now, this.legacy);
      this.deltas.set(from, delta);
      // A failed build is not kept: the next caller tries again.
      delta.catch(() => this.deltas.get(from) === delta && this.deltas.delete(from));
    }
    return delta;
  }
}

/** A snapshot build stops at its next line once no gateway waits for it any more. */
export class SnapshotAbandoned extends CodedError {
  override readonly code = 'SVC_ERR_SNAPSHOT_ABANDONED';

  constructor() {
    super('snapshot no longer needed');
  }
}

/** A full snapshot being built or written (`SnapshotCache`). */
interface SharedSnapshot {
  /** The newest version the hub knew when the build started: the snapshot is at it or newer. */
  wanted: number;
  /** The lines so far, each with its newline: the bytes every gateway receiving it is written. */
  lines: Buffer[];
  /** Its version and digest, once the last line is in. */
  result: { version: number; sha256: string } | null;
  /** Why the build stopped, when it failed or nobody needed it any more. */
  failed: { err: unknown } | null;
  /** Gateways receiving it now. */
  readers: number;
  /** Readers waiting for the next line. */
  waiting: (() => void)[];
  /** Whether this control built it, or read what another control on the database stored. */
  source: 'built' | 'stored';
}

/**
 * Each full snapshot built once, however many gateways need it at the same time (fresh
 * gateways, one that refused an update, a new epoch): the lines are built from one read
 * transaction, kept in memory, and the same bytes are written to every gateway that asks while
 * it is being built or received, each at its own pace (the stream's backpressure). The lines
 * are dropped when the last gateway receiving them is done (a 100,000-key snapshot is about
 * 20 MB, some 190 bytes a key), and a gateway that needs a newer version than the held
 * snapshot's gets a new build.
 */
export class SnapshotCache {
  private current: SharedSnapshot | null = null;

  constructor(
    private readonly store: Store,
    private readonly limits: Limits,
    private readonly epoch: number,
    private readonly controlId: string,
    private readonly log: Logger = silentLogger,
    /**
     * Snapshots for gateways older than prepaid billing (`legacyKey`, `legacyEndpoint`). Built
     * by this control alone: the snapshots controls share are the current form.
     */
    private readonly legacy = false,
  ) {}

  /**
   * Write a full snapshot at version `atLeast` or newer to `write`, line by line (each a
   * `Buffer` ending in a newline; `write` should respect backpressure): the one being built or
   * written to other gateways when it is new enough, else a new one read at `now`.
   *
   * `beforeEnd` is told the snapshot's version and digest before its last line is written: a
   * gateway may ack as soon as it reads that line, so whoever checks acks must know the digest
   * by then. (Each line but the last is written once the next exists or the build is done, so
   * the last is known to be the last.)
   */
  async stream(
    atLeast: number,
    now: number,
    write: (chunk: Buffer) => Promise<void>,
    beforeEnd: (result: { version: number; sha256: string }) => void,
  ): Promise<{ version: number; sha256: string; source: 'built' | 'stored' }> {
    let shared = this.current;
    if (shared === null || shared.failed !== null || (shared.result?.version ?? shared.wanted) < atLeast) shared = this.build(atLeast, now);
    shared.readers++;
    try {
      for (let i = 0; ; i++) {
        // Line i is written when a line after it exists or the build is done.
        while (i + 1 >= shared.lines.length && shared.result === null && shared.failed === null) {
          await new Promise<void>((resolve) => shared.waiting.push(resolve));
        }
        if (shared.failed !== null) throw shared.failed.err;
        if (i >= shared.lines.length) return { ...shared.result!, source: shared.source };
        if (i === shared.lines.length - 1) beforeEnd(shared.result!);
        await write(shared.lines[i]!);
      }
    } finally {
      shared.readers--;
      // Nobody receives it any more: drop it (a build under way stops at its next line).
      if (shared.readers === 0 && this.current === shared) this.current = null;
    }
  }

  private build(wanted: number, now: number): SharedSnapshot {
    const shared: SharedSnapshot = { wanted, lines: [], result: null, failed: null, readers: 0, waiting: [], source: 'built' };
    const wake = () => {
      const waiting = shared.waiting;
      shared.waiting = [];
      for (const resolve of waiting) resolve();
    };
    this.current = shared;
    const push = async (line: string) => {
      if (shared.readers === 0) throw new SnapshotAbandoned();
      shared.lines.push(Buffer.from(line + '\n'));
      wake();
      // Let the event loop run between lines: the build itself never waits for a gateway.
      await new Promise<void>((resolve) => setImmediate(resolve));
    };
    const cluster = this.store.cluster;
    const built =
      cluster === null || this.legacy
        ? writeSnapshot(this.store, this.limits, now, push, this.epoch, this.legacy)
        : this.buildOnce(cluster, shared, wanted, now, push, wake);
    built.then(
      (result) => {
        shared.result = result;
        wake();
      },
      (err: unknown) => {
        shared.failed = { err };
        if (this.current === shared) this.current = null;
        wake();
      },
    );
    return shared;
  }

  /**
   * On a database shared by several controls, the snapshot is built once for all of them
   * (`ClusterTable.snapshotOnce`): this control's gateways receive its lines as they are built,
   * as alone; or, when another control built it, the lines it stored.
   */
  private async buildOnce(
    cluster: ClusterTable,
    shared: SharedSnapshot,
    wanted: number,
    now: number,
    push: (line: string) => Promise<void>,
    wake: () => void,
  ): Promise<{ version: number; sha256: string }> {
    let mine: { version: number; sha256: string } | null = null;
    const answer = await cluster
      .snapshotOnce(this.epoch, wanted, this.controlId, async () => {
        const lines: string[] = [];
        const result = await writeSnapshot(
          this.store,
          this.limits,
          now,
          async (line) => {
            lines.push(line);
            await push(line);
          },
          this.epoch,
        );
        // This control's gateways need not wait while the lines are stored for the others.
        shared.result = mine = result;
        wake();
        return { ...result, lines };
      })
      .catch((err: unknown) => {
        // Built but not stored: this control's gateways have good lines; the others build their own.
        if (mine === null) throw err;
        this.log.warn('snapshot built but not shared with the other controls', { version: mine.version, err });
        return { built: { ...mine, lines: [] } };
      });
    if ('built' in answer) return answer.built;
    // Limits come from each control's own configuration: a control configured unlike the one
    // that built the snapshot sends its own (controls of one cluster should agree; see docs/cluster.md).
    const begin = JSON.parse(answer.stored.lines[0]!) as { limits?: unknown };
    if (JSON.stringify(begin.limits) !== JSON.stringify(this.limits)) return writeSnapshot(this.store, this.limits, now, push, this.epoch);
    shared.source = 'stored';
    for (const line of answer.stored.lines) await push(line);
    return { version: answer.stored.version, sha256: answer.stored.sha256 };
  }
}
