/**
 * One worker of a gateway run as several (`gateway.workers` > 1): a whole gateway of its own to
 * control, with the id `<id>.<n>` and its own data dir (`gateway-<id>.<n>/`: journal, ack file,
 * last-known-good state, limit share), listening on the gateway's port through Node's cluster
 * module. It tells its supervisor when it listens, answers the supervisor's gathers for
 * `/health` and `/metrics`, and stops (the single gateway's shutdown: stop taking calls, ship the
 * last outcomes) when the supervisor says so, on SIGTERM, or when the supervisor is gone.
 */
import cluster from 'node:cluster';
import { hostname } from 'node:os';
import type { Config } from '../../config/load';
import { defaultGatewayId, workerGatewayId } from '../../protocol/snapshot';
import type { GatewayHandle, GatewayStartOptions } from '../main';
import {
  WORKER_INDEX_ENV,
  isSvcMessage,
  type Gathered,
  type GatherKind,
  type ToSupervisor,
  type ToWorker,
  type WorkerReport,
} from './messages';

/** How long a worker waits for the supervisor's gather before answering for itself alone. @default 3 s */
export const GATHER_WAIT_MS = 3_000;

/** This process's worker index (1-based) when it is a gateway worker forked by a supervisor, else null. */
export function workerIndex(): number | null {
  if (!cluster.isWorker) return null;
  const index = Number(process.env[WORKER_INDEX_ENV]);
  return Number.isInteger(index) && index >= 1 ? index : null;
}

/** The gateway id of the whole gateway: configured, or derived from the host name as a single gateway's is. */
export function gatewayBaseId(config: Readonly<Config>): string {
  return config.gateway.id ?? defaultGatewayId(hostname());
}

/** Tell the supervisor; a channel closed meanwhile (it is going away) is no error. */
function send(msg: ToSupervisor): void {
  if (process.connected) process.send!(msg, () => undefined);
}

/**
 * Start this process's gateway as worker `index` and serve until told to stop; resolves once it
 * stopped (the caller exits). `start` is `startGateway` (passed in, so this module stays below main.ts).
 */
export async function runWorker(
  config: Readonly<Config>,
  index: number,
  start: (config: Readonly<Config>, options: GatewayStartOptions) => Promise<GatewayHandle>,
): Promise<void> {
  const base = gatewayBaseId(config);
  const id = workerGatewayId(base, index, config.gateway.workers);
  const waiting = new Map<number, (g: Gathered) => void>();
  let next = 0;
  let gateway: GatewayHandle | null = null;

  const self = async (kind: GatherKind): Promise<Gathered> => ({
    id: base,
    workers: [{ index, id, pid: process.pid, state: 'running', restarts: 0, report: await report(kind) }],
  });
  // The supervisor asks every worker, this one included; without an answer in time, this worker answers alone.
  const gather = (kind: GatherKind): Promise<Gathered> => {
    if (!process.connected) return self(kind);
    const req = ++next;
    return new Promise<Gathered>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(req);
        void self(kind).then(resolve);
      }, GATHER_WAIT_MS);
      waiting.set(req, (g) => {
        clearTimeout(timer);
        resolve(g);
      });
      send({ svc: 'gather', req, kind });
    });
  };
  const report = async (kind: GatherKind): Promise<WorkerReport> => {
    const g = gateway!;
    return {
      health: g.health(),
      pid: process.pid,
      connections: g.connections(),
      answered: await g.metrics.answered(),
      metrics: kind === 'metrics' ? await g.metrics.json() : null,
    };
  };

  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  process.on('message', (msg: unknown) => {
    if (!isSvcMessage<ToWorker>(msg)) return;
    if (msg.svc === 'gathered') {
      const answer = waiting.get(msg.req);
      waiting.delete(msg.req);
      answer?.(msg.gathered);
    } else if (msg.svc === 'report' && gateway !== null)
      void report(msg.kind).then((r) => send({ svc: 'report', req: msg.req, report: r }));
    else if (msg.svc === 'stop') stop();
  });
  // The supervisor stops the workers; a signal to the whole process group (Ctrl-C) is its to handle.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => stop());
  // The supervisor gone (killed): Node's cluster exits a worker at once on that, cutting its calls
  // and its last shipment; marked as a disconnect it expected, it stops as a gateway stops instead.
  cluster.worker?.on('disconnect', () => {
    cluster.worker!.exitedAfterDisconnect = true;
    stop();
  });

  try {
    gateway = await start({ ...config, gateway: { ...config.gateway, id } }, { cluster: { gather } });
  } catch (err) {
    // The IPC channel would keep a worker that never started alive: close it, so it exits with the error.
    leave();
    throw err;
  }
  send({ svc: 'listening', url: gateway.url });
  await stopped;
  await gateway.close();
  // The IPC channel would keep the process alive: close it so the worker exits.
  leave();
}

/**
 * Close the IPC channel as a worker that is done (`exitedAfterDisconnect`), so the process exits
 * with its own exit code once its work is over (a bare disconnect makes Node's cluster exit it 0 at once).
 */
function leave(): void {
  if (process.connected) cluster.worker?.disconnect();
}
