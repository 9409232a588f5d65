/**
 * The steps of a gateway's start-up and shutdown that `main.ts`'s `startGateway` runs in order:
 * the last-known-good state, the metrics, sync stream and shipper on control, the agents' HTTP
 * server and its listen, and the shutdown that stops them all.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/load';
import { HTTP_METHODS } from '../protocol/endpoint';
import type { ErrorCode } from '../protocol/errors';
import { EDGE_SERVER_OPTIONS, answerParserErrors, edgeListener } from '../runtime/http-edge';
import type { Logger } from '../runtime/log';
import type { GatewayEngine } from '../protocol/snapshot';
import type { ControlEndpoints } from './control-link/sync-http';
import type { Journal } from './journal/journal';
import { OutcomeShipper } from './journal/shipper';
import { GatewayMetrics } from './metrics';
import type { GatewayProxy } from './proxy/index';
import { Budgets } from './state/budgets';
import type { Coverage } from './state/coverage';
import type { LimitShare } from './state/share';
import type { SnapshotFile } from './state/snapshot-file';
import type { GatewayState } from './state/state';
import { SyncClient } from './state/sync-client';

/** How long shutdown waits for in-flight calls and a last outcome shipment. @default 5 s */
export const SHUTDOWN_GRACE_MS = 5_000;
/** Node checks header/request timeouts this often; its default (30 s) lets slowloris linger. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
export const MAX_HEADER_BYTES = 16 * 1024;

/** The state saved by the last run (fail static), or null when there is none or it is unusable. */
export async function loadLastKnownGood(file: SnapshotFile, log: Logger): Promise<GatewayState | null> {
  try {
    const loaded = await file.load();
    if (!loaded) return null;
    const { state } = loaded;
    log.info('loaded last-known-good state', { version: state.version, keys: state.keyCount, deltas: loaded.deltasApplied });
    return state;
  } catch (err) {
    log.warn('persisted state unusable; waiting for control', { err });
    return null;
  }
}

/**
 * The agents' HTTP server: the edge checks of `runtime/http-edge.ts`, then the operator routes
 * (`/health`, `/metrics`), then the request pipeline.
 */
export function createGatewayServer(
  config: Readonly<Config>,
  operator: (req: IncomingMessage, res: ServerResponse) => boolean,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  metrics: GatewayMetrics,
): Server {
  const refused = (code: ErrorCode) => metrics.rejection(code);
  const server: Server = createServer(
    {
      ...EDGE_SERVER_OPTIONS,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
      headersTimeout: config.gateway.headersTimeoutMs,
      requestTimeout: config.gateway.requestTimeoutMs,
      keepAliveTimeout: config.gateway.keepAliveTimeoutMs,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    edgeListener((req: IncomingMessage, res: ServerResponse) => {
      if (!operator(req, res)) handle(req, res);
    }, refused),
  );
  // No field cap in Node's parser: it would cut `req.headers` short while `rawHeaders` (what is
  // forwarded) keeps every field. The handler refuses more than `gateway.maxHeaders` fields.
  server.maxHeadersCount = 0;
  answerParserErrors(server, { allow: HTTP_METHODS.join(', '), onRefused: refused });
  return server;
}

/** A count of the connections `server` accepts from now on (a worker's, for the gateway's `/health`). */
export function countConnections(server: Server): () => number {
  let accepted = 0;
  server.on('connection', () => accepted++);
  return () => accepted;
}

/** Listen on `port` and `host`; the URL the server is reachable at. */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const addr = server.address() as AddressInfo;
  return `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
}

/** What shutdown stops, in order. */
export interface Running {
  server: Server;
  sync: SyncClient;
  shipper: OutcomeShipper;
  budgets: Budgets;
  proxy: GatewayProxy;
  journal: Journal;
  file: SnapshotFile;
  unlock: () => Promise<void>;
}

/**
 * Shutdown, once: stop taking calls and wait for those in flight (up to the grace), stop the
 * sync stream, ship what the journal holds (up to the grace), then release everything.
 */
export function closer(running: Running): () => Promise<void> {
  const { server, sync, shipper, budgets, proxy, journal, file, unlock } = running;
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    await new Promise<void>((done) => {
      const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      server.close(() => {
        clearTimeout(force);
        done();
      });
      server.closeIdleConnections();
    });
    sync.stop();
    budgets.stop();
    await Promise.race([shipper.drain(), new Promise((r) => setTimeout(r, SHUTDOWN_GRACE_MS).unref())]);
    shipper.stop();
    proxy.close();
    await journal.close();
    await file.close();
    await unlock();
  };
}

/** The state a gateway serves from: null until a snapshot is loaded, then replaced by each sync update. */
export interface Live {
  state: GatewayState | null;
}

/** What `connect` wires to control. */
export interface Wiring {
  id: string;
  engine: GatewayEngine;
  /** This process run's id: announced on the sync stream, named in budget requests and reserved calls' records. */
  instance: string;
  log: Logger;
  syncToken: string;
  control: ControlEndpoints;
  file: SnapshotFile;
  share: LimitShare;
  coverage: Coverage;
  journal: Journal;
  live: Live;
}

/**
 * The gateway's metrics, the sync stream (which replaces `live.state` and saves each update to
 * `file`), the outcome shipper (which empties `journal`) and the prepaid budgets, all on the
 * same `control`.
 */
export function connect(w: Wiring): { metrics: GatewayMetrics; sync: SyncClient; shipper: OutcomeShipper; budgets: Budgets } {
  const { live, journal, control } = w;
  const metrics = new GatewayMetrics({
    snapshotVersion: () => live.state?.version ?? 0,
    snapshotAgeSeconds: () => (live.state ? (Date.now() - live.state.appliedAt) / 1000 : null),
    journalBacklog: () => journal.backlog(),
    controlConnected: () => sync.connected,
    keys: () => live.state?.keyCount ?? 0,
  });
  control.onMove(() => metrics.controlMoved());
  const budgets = new Budgets({
    control,
    syncToken: w.syncToken,
    gatewayId: w.id,
    instance: w.instance,
    backlog: () => journal.backlog(),
    log: w.log,
  });
  const sync = new SyncClient({
    controlUrl: control,
    syncToken: w.syncToken,
    gatewayId: w.id,
    engine: w.engine,
    instance: w.instance,
    onFunded: (accounts) => budgets.funded(accounts),
    file: w.file,
    share: w.share,
    coverage: w.coverage,
    log: w.log,
    initial: live.state,
    onState: (s) => (live.state = s),
    onUpdate: (kind) => metrics.syncUpdate(kind),
  });
  const shipper = new OutcomeShipper({
    controlUrl: control,
    syncToken: w.syncToken,
    gatewayId: w.id,
    journal,
    log: w.log,
    onShipped: (n) => metrics.outcomesShipped(n),
    onFailure: () => metrics.shipFailure(),
    onRejected: () => metrics.outcomeRejected(),
    // Covered failures stay counted against the allowance until control has seen their records.
    onAcked: w.coverage,
  });
  return { metrics, sync, shipper, budgets };
}
