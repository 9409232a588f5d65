/**
 * The gateway process: loads its last-known-good state, dials control, opens the outcome
 * journal and serves agents' calls. `startGateway` is what `svcctl serve gateway` runs and
 * what in-process tests call.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultControlUrl, type Config } from '../config/load';
import { sendJson } from '../protocol/http';
import { createLogger, type Logger } from '../protocol/log';
import { createHandler } from './handler';
import { Journal } from './journal';
import { GatewayMetrics } from './metrics';
import { createProxy } from './proxy';
import { OutcomeShipper } from './shipper';
import { SnapshotFile } from './snapshot-file';
import type { GatewayState } from './state';
import { SyncClient } from './sync-client';

/** How long shutdown waits for in-flight calls and a last outcome shipment. @default 5 s */
export const SHUTDOWN_GRACE_MS = 5_000;
/** Node checks header/request timeouts this often; its default (30 s) lets slowloris linger. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
export const MAX_HEADER_BYTES = 16 * 1024;
export const MAX_HEADERS_COUNT = 100;

export interface GatewayHandle {
  id: string;
  url: string;
  controlUrl: string;
  dataDir: string;
  state: () => GatewayState | null;
  metrics: GatewayMetrics;
  close(): Promise<void>;
}

export class GatewayStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayStartError';
  }
}

function readTrimmed(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** Take `<dir>/lock` for this process; a lock whose pid is gone is taken over. */
function lock(dir: string, id: string): () => void {
  const path = join(dir, 'lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readTrimmed(path));
      let alive = false;
      try {
        alive = Number.isInteger(pid) && pid > 0 && process.kill(pid, 0);
      } catch {
        alive = false;
      }
      if (alive) throw new GatewayStartError(`gateway ${id} is already running (pid ${pid}); give this one another id with SVC_GATEWAY_ID`);
      rmSync(path, { force: true });
    }
  }
  throw new GatewayStartError(`cannot lock ${path}`);
}

function controlUrlOf(config: Readonly<Config>, dataDir: string): string {
  if (config.controlUrl !== undefined) return config.controlUrl;
  const runtime = readTrimmed(join(dataDir, 'control.json'));
  if (runtime !== null) {
    try {
      const url = (JSON.parse(runtime) as { urls?: { control?: unknown } }).urls?.control;
      if (typeof url === 'string') return url;
    } catch {
      // fall through
    }
  }
  return defaultControlUrl(config);
}

export async function startGateway(config: Readonly<Config>, options: { log?: Logger } = {}): Promise<GatewayHandle> {
  const id = config.gateway.id ?? `gw-${hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 60)}`;
  const log = options.log ?? createLogger({ level: config.logLevel, base: { role: 'gateway', gateway_id: id } });
  const dataDir = resolve(config.dataDir);
  const syncToken = config.syncToken ?? readTrimmed(join(dataDir, 'sync.token'));
  if (!syncToken) {
    throw new GatewayStartError(`no sync token: set SVC_SYNC_TOKEN or point --data-dir at the directory holding control's sync.token (looked in ${dataDir})`);
  }
  const controlUrl = controlUrlOf(config, dataDir);
  const dir = join(dataDir, `gateway-${id}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const unlock = lock(dir, id);

  const file = new SnapshotFile(join(dir, 'snapshot'));
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
  const sync = new SyncClient({ controlUrl, syncToken, gatewayId: id, file, log, initial: state, onState: (s) => (state = s) });
  const metrics = new GatewayMetrics({
    snapshotVersion: () => state?.version ?? 0,
    snapshotAgeSeconds: () => (state ? (Date.now() - state.appliedAt) / 1000 : null),
    journalBacklog: () => journal.backlog(),
    controlConnected: () => sync.connected,
    keys: () => state?.keyCount ?? 0,
  });
  const shipper = new OutcomeShipper({
    controlUrl,
    syncToken,
    gatewayId: id,
    journal,
    log,
    onShipped: (n) => (metrics.shippedOutcomes += n),
    onFailure: () => metrics.shipFailures++,
    onRejected: () => metrics.rejectedOutcomes++,
  });
  const proxy = createProxy({ maxSockets: config.gateway.upstreamMaxSockets });
  const handle = createHandler({
    gatewayId: id,
    state: () => state,
    proxy,
    journal,
    metrics,
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maintenanceRetryAfterS: config.gateway.maintenanceRetryAfterS,
    trustedProxyHops: config.gateway.trustedProxyHops,
  });

  const health = (res: ServerResponse) => {
    const body = {
      status: state ? 'ok' : 'not_ready',
      ready: state !== null,
      reason: state ? null : sync.lastError ?? 'waiting for the first snapshot from control',
      gateway_id: id,
      snapshot_version: state?.version ?? 0,
      snapshot_age_s: state ? Math.round((Date.now() - state.appliedAt) / 1000) : null,
      control_connected: sync.connected,
      control_url: controlUrl,
      last_nack: sync.lastNack,
      journal_backlog: journal.backlog(),
    };
    sendJson(res, state ? 200 : 503, body);
  };
  const server: Server = createServer(
    {
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
      headersTimeout: config.gateway.headersTimeoutMs,
      requestTimeout: config.gateway.requestTimeoutMs,
      keepAliveTimeout: config.gateway.keepAliveTimeoutMs,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const url = req.url ?? '/';
      if (req.method === 'GET' && (url === '/health' || url.startsWith('/health?'))) return health(res);
      if (req.method === 'GET' && (url === '/metrics' || url.startsWith('/metrics?'))) {
        const text = metrics.render();
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
        res.end(text);
        return;
      }
      handle(req, res);
    },
  );
  server.maxHeadersCount = MAX_HEADERS_COUNT;
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });

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
  log.info('gateway listening', { url, control_url: controlUrl, state_version: state?.version ?? 0 });

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
    journal.close();
    file.close();
    unlock();
  };
  return { id, url, controlUrl, dataDir, state: () => state, metrics, close };
}
