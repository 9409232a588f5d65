/**
 * The sync hub: one long-lived NDJSON stream per connected gateway. On connect a gateway gets
 * a full snapshot or the delta from the version it holds; afterwards every committed state
 * version is pushed as a delta. Acks move the gateway's applied version (and release
 * `--wait`ers); a nack keeps the gateway on its old state and is never answered by resending
 * the same version: the next change goes out as a full snapshot instead.
 *
 * The hub also holds each gateway's lease (renewed by its acks and its answers to pings) and
 * divides the key limits among the live gateways (shares.ts), writing each its own `share`
 * line when its share changes, and tells each whether it covers the calls it admits and its
 * part of the pool's free capital (a `coverage` line, from control's evaluation: coverage.ts),
 * each after an `ingested` line naming the outcome batches that evaluation had seen (the count
 * this process keeps of its ingests: ../ingest-seq.ts).
 *
 * Every `SYNC_BEAT_INTERVAL_MS` it writes a `beat` line to every stream, busy ones included (a
 * snapshot build may keep a stream quiet for seconds), unless the stream is already waiting for
 * the gateway to read: a gateway that hears nothing for a few beats takes this control for hung
 * (stopped, or its event loop stuck) and moves to another.
 *
 * On a database several controls share (`store.cluster`), each gateway is attached to one of
 * them (`gateways.control_id`). The gateways attached to the others (others.ts) count in the
 * division of the limits, as the others count this hub's, so every control divides over the
 * same live gateways; and a `--wait` waits for them too, so a change made through any control
 * is waited for on every live gateway of the cluster.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayStatus, LimitsMode, WaitResult } from '../../protocol/gateways';
import {
  BEAT_LINE,
  SYNC_BEAT_HEADER,
  SYNC_BEAT_INTERVAL_MS,
  SYNC_PING_INTERVAL_MS,
  type Limits,
  type SyncAck,
} from '../../protocol/snapshot';
import type { ControlContext } from '../context';
import type { Coverage } from '../pool';
import { writeCoverageLine, writeShareLine, type CoverageEvaluation } from './side-lines';
import type { GatewayRow } from '../store/gateways';
import { AckBatcher } from './acks';
import { newConnection, sendLines, type Connection } from './connection';
import { divideShares, leaseCheckIntervalMs, membersKey, pingIntervalMs, shareOf, membersWith, totalWeight, type Member } from './shares';
import { OtherControlsGateways } from './others';
import { DeltaCache, SnapshotCache, storeEpoch } from './snapshot';
import { VersionWaiters } from './waiters';

export interface SyncHubOptions {
  /** `limits.mode`. @default the config's */
  mode?: LimitsMode;
  /** `sync.leaseS`. @default the config's */
  leaseS?: number;
}

export class SyncHub {
  private readonly ctx: ControlContext;
  private readonly conns = new Map<string, Connection>();
  private readonly waiters = new VersionWaiters(
    (version) => [
      ...[...this.conns.values()].filter((c) => c.appliedVersion < version).map((c) => c.gatewayId),
      ...this.others
        .live(this.ctx.now())
        .filter((row) => row.applied_version < version)
        .map((row) => row.id),
    ],
    () => this.conns.size + this.others.live(this.ctx.now()).length,
  );
  /** The gateways attached to the other controls of a shared database. */
  private readonly others: OtherControlsGateways;
  private closed = false;
  private readonly ping: NodeJS.Timeout;
  private readonly beat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private pushScheduled = false;
  /** The newest committed state version (loaded at open, then from the store's version listener). */
  private version: number;
  /** The database's epoch (see `storeEpoch`). */
  private readonly epoch: number;
  /** Each known gateway's weight, as stored (loaded at open; `weightChanged` keeps it current). */
  private readonly weights = new Map<string, number>();
  private readonly deltas: DeltaCache;
  /** Deltas and snapshots for gateways older than prepaid billing (no `instance` on their stream). */
  private readonly legacyDeltas: DeltaCache;
  private readonly legacySnapshots: SnapshotCache;
  private readonly snapshots: SnapshotCache;
  /** Acks and sightings of one event-loop turn, stored in one transaction. */
  private readonly acks: AckBatcher;
  readonly mode: LimitsMode;
  readonly leaseS: number;
  private readonly leaseMs: number;
  private readonly leaseCheck: NodeJS.Timeout;
  /**
   * Gateways that held a share when control last ran and were seen within the lease: until each
   * reconnects or its lease (from its last seen) lapses, it still counts in the division, since
   * it keeps enforcing its share meanwhile. Id → lease end (ms).
   */
  private readonly held = new Map<string, number>();
  /** The members of the last division (`membersKey`), to notice when they change. */
  private membersKey = '';
  /** Control's last evaluation of coverage (`publishCoverage`), with what it had ingested; null until the first. */
  private coverage: CoverageEvaluation | null = null;

  /** Load what the hub keeps in memory from the store (gateways, version, epoch), then start it. */
  static async open(ctx: ControlContext, limits: Limits, options: SyncHubOptions = {}): Promise<SyncHub> {
    const [gateways, version, epoch] = await Promise.all([ctx.store.gateways.list(), ctx.store.version(), storeEpoch(ctx.store)]);
    return new SyncHub(ctx, limits, { gateways, version, epoch }, options);
  }

  private constructor(
    ctx: ControlContext,
    limits: Limits,
    loaded: { gateways: readonly GatewayRow[]; version: number; epoch: number },
    options: SyncHubOptions,
  ) {
    this.ctx = ctx;
    this.deltas = new DeltaCache(ctx.store, limits);
    this.snapshots = new SnapshotCache(ctx.store, limits, loaded.epoch, ctx.controlId, ctx.log);
    this.legacyDeltas = new DeltaCache(ctx.store, limits, true);
    this.legacySnapshots = new SnapshotCache(ctx.store, limits, loaded.epoch, ctx.controlId, ctx.log, true);
    this.acks = new AckBatcher((rows) => ctx.store.gateways.ackedMany(rows, ctx.controlId));
    this.mode = options.mode ?? ctx.config.limits.mode;
    this.leaseS = options.leaseS ?? ctx.config.sync.leaseS;
    this.leaseMs = this.leaseS * 1000;
    this.version = loaded.version;
    this.epoch = loaded.epoch;
    this.others = new OtherControlsGateways({
      store: ctx.store,
      controlId: ctx.controlId,
      leaseMs: this.leaseMs,
      log: ctx.log,
      isLocal: (id) => this.conns.has(id),
      // Their weights may have been set through another control; their acks release waiters.
      read: (rows) => {
        for (const row of rows) this.weights.set(row.id, row.weight);
        this.waiters.check();
        this.checkLeases();
      },
    });
    const now = ctx.now();
    this.others.load(loaded.gateways);
    for (const row of loaded.gateways) {
      this.weights.set(row.id, row.weight);
      if (row.share !== null && row.last_seen + this.leaseMs > now && !this.others.has(row.id))
        this.held.set(row.id, row.last_seen + this.leaseMs);
    }
    this.membersKey = membersKey(this.members(now));
    this.unsubscribe = ctx.store.onVersion((version) => {
      this.version = Math.max(this.version, version);
      this.schedulePush();
    });
    this.ping = setInterval(() => this.pingAll(), pingIntervalMs(this.leaseS, SYNC_PING_INTERVAL_MS));
    this.ping.unref();
    this.beat = setInterval(() => this.beatAll(), SYNC_BEAT_INTERVAL_MS);
    this.beat.unref();
    this.leaseCheck = setInterval(
      () => (this.others.shared ? this.others.refresh() : this.checkLeases()),
      leaseCheckIntervalMs(this.leaseS),
    );
    this.leaseCheck.unref();
  }

  /** Serve `GET /_sync/v1/stream?gateway_id=…&version=…&epoch=…&engine=…&instance=…`. */
  async connect(
    req: IncomingMessage,
    res: ServerResponse,
    gatewayId: string,
    heldVersion: number,
    heldEpoch: number | null,
    engine: string | null = null,
    instance: string | null = null,
  ): Promise<void> {
    const now = this.ctx.now();
    const row0 = await this.ctx.store.gateways.attach(gatewayId, this.ctx.controlId, engine, now);
    this.weights.set(gatewayId, row0.weight);
    this.others.forget(gatewayId);
    // The gateway may have hung up while the store answered: detached again, nothing to serve.
    if (res.destroyed) {
      if (!this.conns.has(gatewayId)) this.record(this.ctx.store.gateways.detach(gatewayId, this.ctx.controlId), 'detach');
      return;
    }
    this.conns.get(gatewayId)?.res.end();
    const conn = newConnection(gatewayId, res, row0.last_nack_version ?? 0, instance);
    this.conns.set(gatewayId, conn);
    this.held.delete(gatewayId);
    req.socket.setKeepAlive(true, 5_000);
    req.socket.setNoDelay(true);
    res.writeHead(200, {
      'content-type': 'application/x-ndjson',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      [SYNC_BEAT_HEADER]: String(SYNC_BEAT_INTERVAL_MS),
    });
    res.flushHeaders();
    const onClose = () => {
      conn.closed = true;
      if (this.conns.get(gatewayId) === conn) {
        this.conns.delete(gatewayId);
        if (!this.closed) this.record(this.ctx.store.gateways.detach(gatewayId, this.ctx.controlId), 'detach');
      }
      this.ctx.log.info('gateway disconnected', { gateway_id: gatewayId });
      this.waiters.check();
      this.checkLeases();
    };
    res.on('close', onClose);
    res.on('error', () => undefined);

    // Its share until it acks and control re-divides: as if it had joined the live gateways.
    const provisional = this.provisionalShare(gatewayId, now);
    this.writeShare(conn, provisional, this.members(now).length + 1);
    if (row0.share !== provisional) this.record(this.ctx.store.gateways.recordShares(new Map([[gatewayId, provisional]])), 'share');
    this.writeCoverage(conn, now);

    const current = this.version;
    const sameEpoch = heldEpoch !== null && heldEpoch === this.epoch;
    this.ctx.log.info('gateway connected', { gateway_id: gatewayId, held_version: heldVersion, state_version: current, engine });
    if (sameEpoch && heldVersion === current) {
      conn.sentVersion = current;
      conn.appliedVersion = current;
      this.record(this.acks.add({ id: gatewayId, at: now, version: current, sha256: row0.applied_sha256 }), 'ack');
      // Say something at once, so the gateway knows the stream is live without waiting for a ping.
      res.write(JSON.stringify({ type: 'ping', version: current }) + '\n');
      this.waiters.check();
      return;
    }
    // After a refused update the gateway's state may have diverged: answer with a full snapshot.
    const nackedLast = row0.last_nack_version !== null && row0.last_nack_version > row0.applied_version;
    conn.sentVersion = !nackedLast && sameEpoch && heldVersion > 0 && heldVersion < current ? heldVersion : 0;
    conn.appliedVersion = sameEpoch ? Math.min(heldVersion, current) : 0;
    conn.needsFull = conn.sentVersion === 0;
    void this.push(conn);
  }

  /** The newest committed state version this hub knows of. */
  currentVersion(): number {
    return this.version;
  }

  /** A gateway was seen alive (it shipped outcomes): stored with this turn's acks, settles once stored. */
  seen(gatewayId: string, now: number): Promise<void> {
    return this.acks.add({ id: gatewayId, at: now });
  }

  /**
   * Handle `POST /_sync/v1/ack`: answered once the ack (or the lease renewal) is stored, with
   * the others of this event-loop turn in one transaction.
   */
  async ack(body: SyncAck): Promise<void> {
    const now = this.ctx.now();
    if (body.renew === true) {
      // A lease renewal (the answer to a ping): the gateway is alive and still holds its state.
      await this.acks.add({ id: body.gateway_id, at: now });
      const conn = this.conns.get(body.gateway_id);
      if (conn) this.renew(conn, now);
      return;
    }
    const conn = this.conns.get(body.gateway_id);
    if (conn) this.renew(conn, now);
    if (body.ok) {
      const expected = conn?.sent.get(body.version);
      if (conn && expected !== undefined && expected !== body.sha256) {
        await this.nack(conn, body.gateway_id, body.version, `digest mismatch: applied ${body.sha256 ?? 'none'}, sent ${expected}`, now);
        return;
      }
      await this.acks.add({ id: body.gateway_id, at: now, version: body.version, sha256: body.sha256 ?? null });
      if (conn) {
        conn.appliedVersion = Math.max(conn.appliedVersion, body.version);
        for (const v of conn.sent.keys()) if (v <= body.version) conn.sent.delete(v);
      }
      this.waiters.check();
      return;
    }
    await this.nack(conn, body.gateway_id, body.version, body.reason ?? 'rejected', now);
  }

  private async nack(conn: Connection | undefined, gatewayId: string, version: number, reason: string, now: number): Promise<void> {
    await this.ctx.store.gateways.nacked(gatewayId, version, reason, now);
    this.ctx.log.warn('gateway rejected update', { gateway_id: gatewayId, version, reason });
    if (conn) {
      conn.sent.delete(version);
      conn.nackedVersion = Math.max(conn.nackedVersion, version);
      // The gateway kept its old state; resend nothing now, send a full snapshot on the next change.
      conn.sentVersion = conn.appliedVersion;
      conn.needsFull = true;
    }
    this.waiters.check();
  }

  /**
   * Resolve once every connected gateway has applied `version`, or after `timeoutMs`; on a
   * shared database, every live gateway attached to another control as well.
   */
  wait(version: number, timeoutMs: number): Promise<WaitResult> {
    const waited = this.waiters.wait(version, timeoutMs);
    // The others' acks are re-read on their announcements; read now too, not to wait on a stale view.
    this.others.refresh();
    return waited;
  }

  /**
   * Every gateway control knows. `share` is the one it was last pushed while its lease holds
   * (it may still enforce it, cut off), and 0 once the lease has lapsed (its last ack, renewal
   * or connect is older than `sync.leaseS`): control has given its part to the others, so a
   * dead gateway is not shown holding a share beside the live ones. (`ctx.gateways()` adds which
   * gateway each worker belongs to.)
   */
  async status(): Promise<Omit<GatewayStatus, 'gateway'>[]> {
    const rows = await this.ctx.store.gateways.list();
    this.others.load(rows);
    const now = this.ctx.now();
    const live = new Set(this.members(now).map((m) => m.id));
    const remoteLive = new Set(this.others.live(now).map((row) => row.id));
    return rows.map((row) => {
      const conn = this.conns.get(row.id);
      const controlId = conn ? this.ctx.controlId : remoteLive.has(row.id) ? row.control_id : null;
      return {
        id: row.id,
        connected: controlId !== null,
        live: live.has(row.id) && controlId !== null,
        weight: row.weight,
        share: now - row.last_seen > this.leaseMs ? (row.share === null ? null : 0) : (conn?.share ?? row.share),
        applied_version: conn?.appliedVersion ?? row.applied_version,
        last_seen: new Date(row.last_seen).toISOString(),
        last_nack:
          row.last_nack_version === null
            ? null
            : `v${row.last_nack_version} at ${new Date(row.last_nack_at!).toISOString()}: ${row.last_nack_reason}`,
        engine: row.engine,
        control_id: controlId,
      };
    });
  }

  connectedCount(): number {
    return this.conns.size;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.ping);
    clearInterval(this.beat);
    clearInterval(this.leaseCheck);
    this.unsubscribe();
    this.others.close();
    this.waiters.close();
    for (const conn of this.conns.values()) conn.res.end();
    this.conns.clear();
  }

  // ----------------------------------------------------------------------------------------
  // Leases and shares

  private renew(conn: Connection, now: number): void {
    const wasLive = this.isLive(conn, now);
    conn.leaseAt = now;
    if (!wasLive) this.checkLeases();
  }

  private isLive(conn: Connection, now: number): boolean {
    return !conn.closed && conn.leaseAt !== null && now - conn.leaseAt <= this.leaseMs;
  }

  /**
   * The gateways counted in the division now, with their weights, sorted by id: the live ones
   * attached here, the held ones, and the live ones attached to the other controls.
   */
  private members(now: number): Member[] {
    const ids = new Set<string>();
    for (const conn of this.conns.values()) if (this.isLive(conn, now)) ids.add(conn.gatewayId);
    for (const [id, until] of this.held) {
      if (until <= now) this.held.delete(id);
      else if (!this.conns.has(id)) ids.add(id);
    }
    for (const row of this.others.live(now)) ids.add(row.id);
    if (ids.size === 0) return [];
    return [...ids].sort().map((id) => ({ id, weight: this.weightOf(id) }));
  }

  private weightOf(gatewayId: string): number {
    return this.weights.get(gatewayId) ?? 1;
  }

  /** A gateway's stored weight changed (`PUT /_admin/v1/gateways/{id}/weight`): divide again. */
  weightChanged(gatewayId: string, weight: number): void {
    this.weights.set(gatewayId, weight);
    this.redivide();
  }

  /** A write the stream does not wait for (a share, an ack at connect): a failure is logged, never dropped silently. */
  private record(write: Promise<unknown>, what: string): void {
    write.catch((err: unknown) => this.ctx.log.error('sync hub could not store a gateway update', { what, err }));
  }

  /** A connecting gateway's share before it acks: its weight over the live gateways' plus its own. */
  private provisionalShare(gatewayId: string, now: number): number {
    const weight = this.weightOf(gatewayId);
    return this.mode === 'per-gateway' ? 1 : shareOf(weight, totalWeight(membersWith(this.members(now), gatewayId, weight)));
  }

  /** Re-divide when the live set changed (a join, a leave, a lapsed lease, a weight another control set). */
  private checkLeases(): void {
    const now = this.ctx.now();
    if (membersKey(this.members(now)) !== this.membersKey) this.redivide(now);
  }

  /**
   * Divide the limits among the live gateways and write each connected one its share if it
   * changed. Runs by itself on joins, leaves and lapsed leases; call it after a weight change.
   */
  redivide(now = this.ctx.now()): void {
    const members = this.members(now);
    this.membersKey = membersKey(members);
    const shares = divideShares(members, this.mode);
    const changed = new Map<string, number>();
    for (const [id, share] of shares) {
      const conn = this.conns.get(id);
      if (!conn || conn.share === share) continue;
      this.writeShare(conn, share, members.length);
      changed.set(id, share);
    }
    if (changed.size > 0) {
      this.record(this.ctx.store.gateways.recordShares(changed), 'shares');
      this.ctx.log.info('limit shares divided', { mode: this.mode, gateways: Object.fromEntries(shares) });
    }
  }

  private writeShare(conn: Connection, share: number, gateways: number): void {
    writeShareLine(conn, share, gateways, this.mode);
  }

  /**
   * Control's evaluation of coverage (coverage.ts, every second), told to each stream when it
   * changed for it; `seen`: what this process had ingested when the evaluation started.
   */
  publishCoverage(coverage: Coverage, seen: CoverageEvaluation['seen'] = null): void {
    this.coverage = { coverage, seen };
    const now = this.ctx.now();
    for (const conn of this.conns.values()) this.writeCoverage(conn, now);
  }

  private writeCoverage(conn: Connection, now: number): void {
    if (this.coverage !== null)
      writeCoverageLine(conn, this.coverage, membersWith(this.members(now), conn.gatewayId, this.weightOf(conn.gatewayId)), now);
  }

  private schedulePush(): void {
    if (this.pushScheduled) return;
    this.pushScheduled = true;
    setImmediate(() => {
      this.pushScheduled = false;
      for (const conn of this.conns.values()) void this.push(conn);
    });
  }

  private pingAll(): void {
    const line = JSON.stringify({ type: 'ping', version: this.version }) + '\n';
    for (const conn of this.conns.values()) if (!conn.busy) conn.res.write(line);
  }

  /**
   * A beat on every stream, between whole lines like a share line; not on one whose writes
   * already wait for the gateway to read (it has lines coming, and a beat would only add to them).
   */
  private beatAll(): void {
    for (const conn of this.conns.values()) if (!conn.closed && !conn.res.writableNeedDrain) conn.res.write(BEAT_LINE);
  }

  private write(conn: Connection, line: string): Promise<void> {
    return sendLines(conn, line + '\n');
  }

  private async push(conn: Connection): Promise<void> {
    if (conn.closed) return;
    if (conn.busy) {
      conn.dirty = true;
      return;
    }
    const current = this.version;
    if (current <= conn.nackedVersion) return;
    if (!conn.needsFull && conn.sentVersion >= current) return;
    conn.busy = true;
    try {
      do {
        conn.dirty = false;
        const delta =
          conn.needsFull || conn.sentVersion === 0
            ? null
            : await (conn.instance === null ? this.legacyDeltas : this.deltas).get(conn.sentVersion, this.ctx.now());
        // The read found no version after the one sent: the stream already holds the newest (a
        // delta read may see a commit before this hub hears of it). A delta to the same version
        // would be refused, and its digest would replace the one the gateway is about to ack.
        if (delta && delta.version <= conn.sentVersion) break;
        if (delta) {
          conn.sent.set(delta.version, delta.sha256);
          conn.sentVersion = delta.version;
          await this.write(conn, delta.line);
        } else {
          const started = Date.now();
          conn.needsFull = false;
          const result = await (conn.instance === null ? this.legacySnapshots : this.snapshots).stream(
            this.version,
            this.ctx.now(),
            (chunk) => sendLines(conn, chunk),
            // Known before the end line goes out: the gateway acks as soon as it reads it.
            ({ version, sha256 }) => {
              conn.sent.set(version, sha256);
              conn.sentVersion = version;
            },
          );
          this.ctx.log.info('snapshot sent', {
            gateway_id: conn.gatewayId,
            version: result.version,
            source: result.source,
            ms: Date.now() - started,
          });
        }
      } while (!conn.closed && this.version > conn.nackedVersion && (conn.dirty || conn.needsFull || conn.sentVersion < this.version));
    } catch (err) {
      if (!conn.closed) {
        this.ctx.log.error('sync push failed', { gateway_id: conn.gatewayId, err });
        conn.res.destroy();
      }
    } finally {
      conn.busy = false;
    }
  }
}
