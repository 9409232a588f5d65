/**
 * What a gateway's supervisor (the cluster primary) and its workers say to each other over
 * Node's cluster IPC channel. Every message carries `svc` so other users of the channel
 * (prom-client's own cluster requests) are told apart.
 */
import type { GatewayHealthDetail } from '../../protocol/gateway';
import type { MetricsJson } from '../metrics';

/** The environment variable that tells a forked worker its index (1 to `gateway.workers`), kept across restarts. */
export const WORKER_INDEX_ENV = 'SVC_GATEWAY_WORKER_INDEX';

/** What `/health` or `/metrics` asks of every worker. */
export type GatherKind = 'health' | 'metrics';

/** One worker's answer to a gather: its own detailed health, and its metrics when they were asked for. */
export interface WorkerReport {
  health: GatewayHealthDetail;
  pid: number;
  connections: number;
  answered: number;
  metrics: MetricsJson | null;
}

/** A worker as the supervisor sees it, with its report when it answered in time. */
export interface GatheredWorker {
  index: number;
  id: string;
  pid: number | null;
  state: 'running' | 'starting' | 'restarting';
  restarts: number;
  report: WorkerReport | null;
}

/** What the supervisor gathered for one `/health` or `/metrics`. */
export interface Gathered {
  /** The gateway's own id (each worker's is `<id>.<index>`). */
  id: string;
  workers: GatheredWorker[];
}

/** Worker → supervisor. */
export type ToSupervisor =
  | { svc: 'listening'; url: string }
  | { svc: 'gather'; req: number; kind: GatherKind }
  | { svc: 'report'; req: number; report: WorkerReport };

/** Supervisor → worker. */
export type ToWorker =
  { svc: 'report'; req: number; kind: GatherKind } | { svc: 'gathered'; req: number; gathered: Gathered } | { svc: 'stop' };

/** Whether `msg` is one of ours (cluster IPC also carries Node's and prom-client's own). */
export function isSvcMessage<T extends { svc: string }>(msg: unknown): msg is T {
  return typeof msg === 'object' && msg !== null && typeof (msg as { svc?: unknown }).svc === 'string';
}
