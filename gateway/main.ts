/**
 * The gateway process: loads its last-known-good state, dials control, opens the outcome
 * journal and serves agents' calls. `startGateway` is what `svcctl serve gateway` runs and
 * what in-process tests call.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultControlUrl, type Config } from '../config/load';
import { METRICS_TOKEN_FILE } from '../protocol/bearer';
import { defaultGatewayId, type GatewayEngine } from '../protocol/snapshot';
import { createLogger, type Logger } from '../runtime/log';
import { RUNTIME_FILE, runtimeControlUrl } from '../protocol/runtime';
import { ControlEndpoints } from './control-link/sync-http';
import { createHandler } from './request/handler';
import { InstanceLockedError, acquireInstanceLock } from '../runtime/instance-lock';
import { Journal } from './journal/journal';
import { healthDetail, operatorRoutes, type OperatorOptions } from './operator';
import { GatewayMetrics } from './metrics';
import { createProxy } from './proxy/index';
import { closer, connect, countConnections, createGatewayServer, listen, loadLastKnownGood, type Live } from './startup';
import { LimitShare } from './state/share';
import { Coverage } from './state/coverage';
import type { BudgetSummary } from './state/budgets';
import { SnapshotFile } from './state/snapshot-file';
import type { GatewayState } from './state/state';
import { CodedError } from '../protocol/coded-error';
import type { GatewayHealthDetail } from '../protocol/gateway';

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
  /** This process run's id (prepaid budgets are held per instance). */
  instance: string;
  /** The prepaid budgets this instance holds. */
  budgets: () => BudgetSummary;
  /** Its detailed `/health` (this process's alone, also when it is one worker of several). */
  health: () => GatewayHealthDetail;
  /** Connections its server accepted since it started (counted for a worker only; else 0). */
  connections: () => number;
  close(): Promise<void>;
}

/** How `startGateway` is run: its logger, and for one worker of several, how it reaches the others. */
export interface GatewayStartOptions {
  log?: Logger;
  /** One worker of a gateway run as several: `/health` and `/metrics` answer for them all (`workers/`). */
  cluster?: OperatorOptions['cluster'];
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

/** Take the gateway dir's single-instance lock (see `runtime/instance-lock.ts`). */
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

/** Who this gateway is and whom it talks to, from the config and the data dir. */
interface Identity {
  id: string;
  log: Logger;
  dataDir: string;
  syncToken: string;
  controlUrls: readonly string[];
}

function identityOf(config: Readonly<Config>, options: { log?: Logger }): Identity {
  const id = config.gateway.id ?? defaultGatewayId(hostname());
  const log = options.log ?? createLogger({ level: config.logLevel, base: { role: 'gateway', gateway_id: id } });
  const dataDir = resolve(config.dataDir);
  const syncToken = config.syncToken ?? readTrimmed(join(dataDir, 'sync.token'));
  if (!syncToken) {
    throw new GatewayStartError(
      `no sync token: set SVC_SYNC_TOKEN or point --data-dir at the directory holding control's sync.token (looked in ${dataDir})`,
    );
  }
  return { id, log, dataDir, syncToken, controlUrls: controlUrlsOf(config, dataDir) };
}

/**
 * Start a gateway: who it is, its locked dir and last-known-good state, the journal, proxy,
 * metrics, sync stream and shipper, the request pipeline behind the server, then listen and
 * start syncing and shipping.
 */
export async function startGateway(config: Readonly<Config>, options: GatewayStartOptions = {}): Promise<GatewayHandle> {
  const { id, log, dataDir, syncToken, controlUrls } = identityOf(config, options);
  // One per process run: budgets control granted an earlier run are not this one's.
  const instance = randomUUID();
  // Shared by the sync stream and the shipper: both talk to the same control, and move together.
  const control = new ControlEndpoints(controlUrls, log);
  const dir = join(dataDir, `gateway-${id}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const unlock = await lock(dir, id);
  // What a start that fails half way (the port taken, the journal unreadable) gives back, newest
  // first: the data dir's lock above all, so the same gateway can be started again.
  const undo: (() => unknown)[] = [unlock];
  try {
    const file = new SnapshotFile(join(dir, 'snapshot'));
    undo.push(() => file.close());
    // The last share of key limits control pushed, kept across restarts (fail static).
    const share = new LimitShare(file.dir);
    // Whether calls are covered, as control last said (not kept: control says it again at once).
    const coverage = new Coverage();
    // The state calls are judged against; each sync update replaces it whole.
    const live: Live = { state: await loadLastKnownGood(file, log) };

    const journal = Journal.open({ dir: join(dir, 'journal') });
    undo.push(() => journal.close());
    // The engine named everywhere (sync hello, /health, the start line) is the proxy's own.
    const proxy = createProxy({
      engine: config.gateway.engine,
      maxSockets: config.gateway.upstreamMaxSockets,
      clientBodyTimeoutMs: config.gateway.clientBodyTimeoutMs,
    });
    undo.push(() => proxy.close());
    const engine = proxy.engine;
    const { metrics, sync, shipper, budgets } = connect({
      id,
      engine,
      instance,
      log,
      syncToken,
      control,
      file,
      share,
      coverage,
      journal,
      live,
    });
    const handle = createHandler({
      gatewayId: id,
      state: () => live.state,
      proxy,
      journal,
      metrics,
      bodyLimitBytes: config.gateway.bodyLimitBytes,
      maintenanceRetryAfterS: config.gateway.maintenanceRetryAfterS,
      trustedProxyHops: config.gateway.trustedProxyHops,
      maxHeaders: config.gateway.maxHeaders,
      limitShare: () => share.value,
      budgets,
      coverage,
    });
    const operatorOptions: OperatorOptions = {
      gatewayId: id,
      engine,
      controlUrl: () => control.current,
      state: () => live.state,
      limitShare: () => share.state,
      coverage: () => coverage.state,
      metrics,
      sync,
      journalBacklog: () => journal.backlog(),
      metricsToken: config.metricsToken,
      metricsTokenFile: join(dataDir, METRICS_TOKEN_FILE),
      ...(options.cluster !== undefined ? { cluster: options.cluster } : {}),
    };
    const server = createGatewayServer(config, operatorRoutes(operatorOptions), handle, metrics);
    const connections = options.cluster === undefined ? () => 0 : countConnections(server);

    const url = await listen(server, config.gateway.port, config.host);
    sync.start();
    shipper.start();
    budgets.start();
    log.info('gateway listening', {
      url,
      engine,
      instance,
      control_url: control.current,
      control_urls: control.urls,
      state_version: live.state?.version ?? 0,
    });
    return {
      id,
      engine,
      url,
      get controlUrl() {
        return control.current;
      },
      controlUrls: control.urls,
      dataDir,
      state: () => live.state,
      metrics,
      instance,
      budgets: () => budgets.summary(),
      health: () => healthDetail(operatorOptions),
      connections,
      close: closer({ server, sync, shipper, budgets, proxy, journal, file, unlock }),
    };
  } catch (err) {
    await undoAll(undo);
    throw err;
  }
}

/** Run each step, newest first, whatever the others do (the start's own error is the one to report). */
async function undoAll(steps: readonly (() => unknown)[]): Promise<void> {
  for (const step of [...steps].reverse()) {
    try {
      await step();
    } catch {
      // already reporting why the start failed
    }
  }
}
