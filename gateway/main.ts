/**
 * The gateway process: loads its last-known-good state, dials control, opens the outcome
 * journal and serves agents' calls. `startGateway` is what `svcctl serve gateway` runs and
 * what in-process tests call.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultControlUrl, type Config } from '../config/load';
import { HTTP_METHODS } from '../protocol/endpoint';
import { METRICS_TOKEN_FILE } from '../protocol/bearer';
import type { ErrorCode } from '../protocol/errors';
import { defaultGatewayId, type GatewayEngine } from '../protocol/snapshot';
import { EDGE_SERVER_OPTIONS, answerParserErrors, edgeListener } from '../protocol/http-edge';
import { createLogger, type Logger } from '../protocol/log';
import { RUNTIME_FILE, runtimeControlUrl } from '../protocol/runtime';
import { ControlEndpoints } from '../protocol/sync-http';
import { createHandler } from './request/handler';
import { InstanceLockedError, acquireInstanceLock } from '../protocol/instance-lock';
import { Journal } from './journal/journal';
import { operatorRoutes } from './operator';
import { GatewayMetrics } from './metrics';
import { createProxy } from './proxy/index';
import { OutcomeShipper } from './journal/shipper';
import { LimitShare } from './state/share';
import { SnapshotFile } from './state/snapshot-file';
import type { GatewayState } from './state/state';
import { SyncClient } from './state/sync-client';
import { CodedError } from '../protocol/coded-error';

/** How long shutdown waits for in-flight calls and a last outcome shipment. @default 5 s */
export const SHUTDOWN_GRACE_MS = 5_000;
/** Node checks header/request timeouts this often; its default (30 s) lets slowloris linger. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
export const MAX_HEADER_BYTES = 16 * 1024;

export interface GatewayHandle {
  id: string;
  /** The proxy engine carrying calls (`gateway.engine`). */
  engine: GatewayEngine;
  url: string;
  /** The control the gateway talks to now (one of `controlUrls`). */
  readonly controlUrl: string;
  /** Every control it may talk to, in the order it tries them. */
  controlUrls: readonly string[];
  dataDir: string;
  state: () => GatewayState | null;
  metrics: GatewayMetrics;
  close(): Promise<void>;
}

export class GatewayStartError extends CodedError {
  override readonly code = 'SVC_ERR_GATEWAY_START';
  constructor(message: string) {
    super(message);
  }
}

function readTrimmed(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** Take the gateway dir's single-instance lock (see `protocol/instance-lock.ts`). */
async function lock(dir: string, id: string): Promise<() => Promise<void>> {
  try {
    return (await acquireInstanceLock(dir)).release;
  } catch (err) {
    if (!(err instanceof InstanceLockedError)) throw err;
    const pid = err.pid === null ? '' : ` (pid ${err.pid})`;
    throw new GatewayStartError(`gateway ${id} is already running${pid}; give this one another id with SVC_GATEWAY_ID`);
  }
}

/**
 * The controls to dial, in order: `controlUrls` when set (over `controlUrl`), else the one
 * control of `controlUrl`, the running control in the data dir, or host and control port.
 */
export function controlUrlsOf(config: Readonly<Config>, dataDir: string): readonly string[] {
  if (config.controlUrls !== undefined) return config.controlUrls;
  if (config.controlUrl !== undefined) return [config.controlUrl];
  return [runtimeControlUrl(readTrimmed(join(dataDir, RUNTIME_FILE))) ?? defaultControlUrl(config)];
}

export async function startGateway(config: Readonly<Config>, options: { log?: Logger } = {}): Promise<GatewayHandle> {
  const id = config.gateway.id ?? defaultGatewayId(hostname());
  const log = options.log ?? createLogger({ level: config.logLevel, base: { role: 'gateway', gateway_id: id } });
  const dataDir = resolve(config.dataDir);
  const syncToken = config.syncToken ?? readTrimmed(join(dataDir, 'sync.token'));
  if (!syncToken) {
    throw new GatewayStartError(
      `no sync token: set SVC_SYNC_TOKEN or point --data-dir at the directory holding control's sync.token (looked in ${dataDir})`,
    );
  }
  const controlUrls = controlUrlsOf(config, dataDir);
  // Shared by the sync stream and the shipper: both talk to the same control, and move together.
  const control = new ControlEndpoints(controlUrls, log);
  const dir = join(dataDir, `gateway-${id}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const unlock = await lock(dir, id);

  const file = new SnapshotFile(join(dir, 'snapshot'));
  // The last share of key limits control pushed, kept across restarts (fail static).
  const share = new LimitShare(file.dir);
  let state: GatewayState | null = null;
  try {
    const loaded = await file.load();
    if (loaded) {
      state = loaded.state;
      log.info('loaded last-known-good state', { version: state.version, keys: state.keyCount, deltas: loaded.deltasApplied });
    }
  } catch (err) {
    log.warn('persisted state unusable; waiting for control', { err });
  }

  const journal = Journal.open({ dir: join(dir, 'journal') });
  // The engine named everywhere (sync hello, /health, the start line) is the proxy's own.
  const proxy = createProxy({
    engine: config.gateway.engine,
    maxSockets: config.gateway.upstreamMaxSockets,
    clientBodyTimeoutMs: config.gateway.clientBodyTimeoutMs,
  });
  const engine = proxy.engine;
  const metrics = new GatewayMetrics({
    snapshotVersion: () => state?.version ?? 0,
    snapshotAgeSeconds: () => (state ? (Date.now() - state.appliedAt) / 1000 : null),
    journalBacklog: () => journal.backlog(),
    controlConnected: () => sync.connected,
    keys: () => state?.keyCount ?? 0,
  });
  control.onMove(() => metrics.controlMoved());
  const sync = new SyncClient({
    controlUrl: control,
    syncToken,
    gatewayId: id,
    engine,
    file,
    share,
    log,
    initial: state,
    onState: (s) => (state = s),
    onUpdate: (kind) => metrics.syncUpdate(kind),
  });
  const shipper = new OutcomeShipper({
    controlUrl: control,
    syncToken,
    gatewayId: id,
    journal,
    log,
    onShipped: (n) => metrics.outcomesShipped(n),
    onFailure: () => metrics.shipFailure(),
    onRejected: () => metrics.outcomeRejected(),
  });
  const handle = createHandler({
    gatewayId: id,
    state: () => state,
    proxy,
    journal,
    metrics,
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maintenanceRetryAfterS: config.gateway.maintenanceRetryAfterS,
    trustedProxyHops: config.gateway.trustedProxyHops,
    maxHeaders: config.gateway.maxHeaders,
    limitShare: () => share.value,
  });

  const operator = operatorRoutes({
    gatewayId: id,
    engine,
    controlUrl: () => control.current,
    state: () => state,
    limitShare: () => share.state,
    metrics,
    sync,
    journalBacklog: () => journal.backlog(),
    metricsToken: config.metricsToken,
    metricsTokenFile: join(dataDir, METRICS_TOKEN_FILE),
  });
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

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(config.gateway.port, config.host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
  sync.start();
  shipper.start();
  log.info('gateway listening', {
    url,
    engine,
    control_url: control.current,
    control_urls: control.urls,
    state_version: state?.version ?? 0,
  });

  let closed = false;
  const close = async () => {
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
    await Promise.race([shipper.drain(), new Promise((r) => setTimeout(r, SHUTDOWN_GRACE_MS).unref())]);
    shipper.stop();
    proxy.close();
    await journal.close();
    file.close();
    await unlock();
  };
  return {
    id,
    engine,
    url,
    get controlUrl() {
      return control.current;
    },
    controlUrls: control.urls,
    dataDir,
    state: () => state,
    metrics,
    close,
  };
}
