/**
 * The supervisor of a gateway run as several workers (`gateway.workers` > 1): the cluster
 * primary. It forks worker 1 to N (each a whole gateway, `worker.ts`), all listening on the one
 * port; says the gateway is up once every worker listens; starts a worker that exits again, with
 * a backoff so a crash loop does not spin; answers the workers' gathers for `/health` and
 * `/metrics`; and on `close` stops them all (each the single gateway's shutdown: stop taking
 * calls, ship the last outcomes) and resolves once every worker has exited.
 *
 * Connections are handed to workers round-robin by the primary (`cluster.SCHED_RR`, Node's
 * default off Windows) unless `NODE_CLUSTER_SCHED_POLICY` says otherwise: measured in
 * docs/gateway.md, "Workers", the kernel's choice (`none`) left one worker most connections.
 */
import cluster, { type Worker } from 'node:cluster';
import { workerGatewayId } from '../../protocol/snapshot';
import type { Logger } from '../../runtime/log';
import { GatewayStartError } from '../main';
import { SHUTDOWN_GRACE_MS } from '../startup';
import {
  WORKER_INDEX_ENV,
  isSvcMessage,
  type Gathered,
  type GatheredWorker,
  type ToSupervisor,
  type ToWorker,
  type WorkerReport,
} from './messages';

/** First wait before a worker that exited is started again; doubled for each quick exit in a row. @default 250 ms */
export const RESTART_BASE_MS = 250;
/** Longest wait between restarts of a worker that keeps exiting. @default 30 s */
export const RESTART_MAX_MS = 30_000;
/** A worker that ran this long before it exited starts the backoff from the beginning. @default 10 s */
export const STABLE_MS = 10_000;
/** How long the supervisor waits for each worker's report to a gather. @default 2 s */
export const REPORT_WAIT_MS = 2_000;
/** How long a worker may take to stop (in-flight calls, then the last shipment) before it is killed. */
export const WORKER_STOP_MS = 2 * SHUTDOWN_GRACE_MS + 2_000;

interface Slot {
  index: number;
  id: string;
  worker: Worker | null;
  state: GatheredWorker['state'];
  restarts: number;
  /** Quick exits in a row (the backoff's exponent). */
  failures: number;
  startedAt: number;
  timer: NodeJS.Timeout | null;
}

export interface SupervisorOptions {
  /** The gateway's id; worker n is `<id>.<n>`. */
  id: string;
  workers: number;
  log: Logger;
}

export class GatewaySupervisor {
  private readonly slots: Slot[];
  private stopping = false;
  private nextReq = 0;
  private readonly reports = new Map<number, (index: number, report: WorkerReport) => void>();
  private onListening: ((slot: Slot, url: string) => void) | null = null;
  private onEarlyExit: ((slot: Slot, why: string) => void) | null = null;

  constructor(private readonly opts: SupervisorOptions) {
    this.slots = Array.from({ length: opts.workers }, (_, i) => ({
      index: i + 1,
      id: workerGatewayId(opts.id, i + 1, opts.workers),
      worker: null,
      state: 'starting',
      restarts: 0,
      failures: 0,
      startedAt: 0,
      timer: null,
    }));
  }

  /** The workers' ids, in index order. */
  get ids(): string[] {
    return this.slots.map((s) => s.id);
  }

  /** The workers' process ids now (null for one not running). */
  get pids(): (number | null)[] {
    return this.slots.map((s) => s.worker?.process.pid ?? null);
  }

  /**
   * Fork every worker and resolve with the gateway's URL once all listen. A worker that exits
   * before that fails the start: the others are stopped and the promise rejects.
   */
  start(): Promise<string> {
    // Node's own default off Windows, set whatever the platform; NODE_CLUSTER_SCHED_POLICY (rr, none) still decides.
    if (process.env.NODE_CLUSTER_SCHED_POLICY === undefined) cluster.schedulingPolicy = cluster.SCHED_RR;
    return new Promise<string>((resolve, reject) => {
      const listening = new Set<number>();
      this.onListening = (slot, url) => {
        listening.add(slot.index);
        if (listening.size < this.slots.length) return;
        this.onListening = null;
        this.onEarlyExit = null;
        resolve(url);
      };
      this.onEarlyExit = (slot, why) => {
        this.onListening = null;
        this.onEarlyExit = null;
        void this.close().then(() => reject(new GatewayStartError(`gateway worker ${slot.id} ${why} before it listened`)));
      };
      for (const slot of this.slots) this.fork(slot);
    });
  }

  private fork(slot: Slot): void {
    slot.timer = null;
    slot.state = 'starting';
    slot.startedAt = Date.now();
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(slot.index) });
    slot.worker = worker;
    worker.on('message', (msg: unknown) => {
      if (isSvcMessage<ToSupervisor>(msg)) this.heard(slot, worker, msg);
    });
    worker.on('exit', (code, signal) => this.exited(slot, worker, signal ?? `code ${code}`));
    // A failed fork or IPC write: the exit that follows (if any) is what counts; never an unhandled 'error'.
    worker.on('error', (err) => this.opts.log.warn('gateway worker error', { worker: slot.id, err }));
  }

  private heard(slot: Slot, worker: Worker, msg: ToSupervisor): void {
    if (msg.svc === 'listening') {
      slot.state = 'running';
      this.opts.log.info('gateway worker listening', { worker: slot.id, pid: worker.process.pid, url: msg.url });
      this.onListening?.(slot, msg.url);
    } else if (msg.svc === 'report') this.reports.get(msg.req)?.(slot.index, msg.report);
    else if (msg.svc === 'gather')
      void this.gather(msg.kind).then((gathered) => this.tell(worker, { svc: 'gathered', req: msg.req, gathered }));
  }

  /** Tell a worker; a channel closed meanwhile (it is exiting) is no error. */
  private tell(worker: Worker, msg: ToWorker): void {
    if (worker.isConnected()) worker.send(msg, () => undefined);
  }

  private exited(slot: Slot, worker: Worker, why: string): void {
    if (slot.worker !== worker) return;
    slot.worker = null;
    if (this.stopping) return;
    if (this.onEarlyExit !== null) return this.onEarlyExit(slot, `exited (${why})`);
    const ranMs = Date.now() - slot.startedAt;
    slot.failures = ranMs >= STABLE_MS ? 0 : slot.failures + 1;
    const delayMs = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** Math.max(0, slot.failures - 1));
    slot.state = 'restarting';
    slot.restarts++;
    this.opts.log.warn('gateway worker exited; starting it again', {
      worker: slot.id,
      pid: worker.process.pid,
      why,
      ran_ms: ranMs,
      in_ms: delayMs,
    });
    slot.timer = setTimeout(() => this.fork(slot), delayMs);
  }

  /** Ask every listening worker for its report (with metrics for `/metrics`); a worker silent for {@link REPORT_WAIT_MS} has none. */
  gather(kind: 'health' | 'metrics'): Promise<Gathered> {
    const req = ++this.nextReq;
    const got = new Map<number, WorkerReport>();
    const asked = this.slots.filter((s) => s.state === 'running' && s.worker !== null && s.worker.isConnected());
    return new Promise<Gathered>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.reports.delete(req);
        resolve({
          id: this.opts.id,
          workers: this.slots.map((s) => ({
            index: s.index,
            id: s.id,
            pid: s.worker?.process.pid ?? null,
            state: s.state,
            restarts: s.restarts,
            report: got.get(s.index) ?? null,
          })),
        });
      };
      const timer = setTimeout(done, REPORT_WAIT_MS);
      this.reports.set(req, (index, report) => {
        got.set(index, report);
        if (asked.every((s) => got.has(s.index))) done();
      });
      if (asked.length === 0) return done();
      for (const s of asked) this.tell(s.worker!, { svc: 'report', req, kind });
    });
  }

  /** Stop every worker (each ships its last outcomes) and resolve once all have exited. */
  async close(): Promise<void> {
    this.stopping = true;
    this.opts.log.info('stopping gateway workers', { workers: this.ids, pids: this.pids });
    await Promise.all(
      this.slots.map(async (slot) => {
        if (slot.timer !== null) clearTimeout(slot.timer);
        slot.timer = null;
        const worker = slot.worker;
        if (worker === null || worker.isDead()) return;
        await new Promise<void>((resolve) => {
          const kill = setTimeout(() => worker.process.kill('SIGKILL'), WORKER_STOP_MS);
          worker.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          if (worker.isConnected()) this.tell(worker, { svc: 'stop' });
          else worker.process.kill('SIGTERM');
        });
      }),
    );
    this.opts.log.info('gateway workers stopped', { workers: this.ids });
  }
}
