/**
 * The control process: bootstraps the data dir, opens the store, and binds the admin/sync,
 * public read and indexer listeners. `startControl` is what `svcctl serve control` runs and
 * what in-process tests call.
 */
import { createServer, type Server } from 'node:http';
import { rmSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/load';
import { EDGE_SERVER_OPTIONS, answerParserErrors, edgeListener } from '../runtime/http-edge';
import { createLogger, type Logger } from '../runtime/log';
import { InstanceLockedError, acquireInstanceLock, controlRunningMessage } from '../runtime/instance-lock';
import { groupWorkers } from '../protocol/gateways';
import { ROOT_ENV_TOKEN_ID, ROOT_TOKEN_ID } from '../protocol/operators';
import { RUNTIME_FILE, type RuntimeInfo } from '../protocol/runtime';
import { AdminAuth, TokenAuth, type Operator } from './admin/auth';
import { registerChangelogRoutes } from './admin/changelog';
import { registerEndpointRoutes } from './admin/endpoints';
import { registerFlagRoutes } from './admin/flags';
import { registerKeyRoutes } from './admin/keys';
import { registerAccountRoutes } from './admin/accounts';
import { registerLpRoutes } from './admin/lps';
import { registerLedgerRoutes } from './admin/ledger';
import { registerOperatorRoutes } from './admin/operators';
import { registerApprovalRoutes } from './admin/approvals';
import { registerOpenApiRoute } from './admin/openapi';
import { registerReceiptAdminRoutes } from './admin/receipts';
import { registerSettlerRoutes } from './admin/settler';
import { registerStatusRoutes } from './admin/status';
import { registerApplicationAdminRoutes } from './applications/admin';
import { registerApplicationRoutes } from './applications/routes';
import { bootstrapDataDir, type BootstrapResult } from './bootstrap';
import type { ControlContext } from './context';
import { indexerListener } from './indexer/server';
import { registerMetricsRoutes } from './metrics';
import { closeServer, listen } from './http/listen';
import { Router } from './http/router';
import { requestListener, type Mount } from './http/serve';
import { publicListener } from './public/server';
import { registerIndexerFeedRoutes } from './public/pages/feeds';
import { TokenConflictError, shareTokens } from './tokens';
import { joinCluster, type Membership } from './cluster';
import { LeaseLeadership, soleLeadership } from './settler/leadership';
import { Settler } from './settler/settler';
import { startRefills, type RefillLoop } from './admin/refills';
import { startWithdrawals, type WithdrawalLoop } from './admin/withdrawals';
import { startCoverage, type CoverageLoop } from './coverage';
import type { Coverage } from './pool';
import { ReceiptChainGuard } from './receipts/chain-guard';
import { makeReceipts } from './receipts/maker';
import type { Store } from './store';
import { openStore } from './store/open';
import { SyncHub } from './sync/hub';
import { registerBudgetRoutes } from './sync/budgets';
import { registerPropagationRoutes, registerSyncRoutes } from './sync/routes';
import { IngestCounter } from './ingest-seq';
import { limitsFromConfig } from './limits';
import { recordLimits } from './sync/snapshot';
import { CodedError } from '../protocol/coded-error';

export interface ControlHandle {
  ctx: ControlContext;
  bootstrap: BootstrapResult;
  urls: { control: string; api: string; indexer: string };
  /** The route tables of control's own listener, by mount (the OpenAPI tests walk them). */
  routers: { admin: Router; sync: Router; metrics: Router };
  /** This control's refill loop (admin/refills.ts): a pass on demand, for the tests. */
  refills: RefillLoop;
  /** This control's withdrawal loop (admin/withdrawals.ts): a pass on demand, for the tests. */
  withdrawals: WithdrawalLoop;
  /** This control's coverage loop (coverage.ts): an evaluation on demand, for the tests. */
  coverage: CoverageLoop;
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  now?: () => number;
  /** How often the refill loop looks for accounts due a refill. @default REFILL_CHECK_MS */
  refillCheckMs?: number;
  /** How often the withdrawal loop looks for withdrawals due. @default WITHDRAWAL_CHECK_MS */
  withdrawalCheckMs?: number;
  /** How often coverage is evaluated. @default COVERAGE_CHECK_MS */
  coverageCheckMs?: number;
}

function configureServer(server: Server): Server {
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

/** Control could not start for a reason the operator must act on (`svcctl` exits 1 with the message). */
export class ControlStartError extends CodedError {
  override readonly code = 'SVC_ERR_CONTROL_START';
  constructor(message: string) {
    super(message);
  }
}

/**
 * Take the data dir's single-instance lock (runtime/instance-lock.ts): two controls on one data
 * dir would each push their own state to their own gateways and each hand out full limit shares.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  try {
    return (await acquireInstanceLock(dataDir, { role: 'control' })).release;
  } catch (err) {
    if (err instanceof InstanceLockedError) throw new ControlStartError(controlRunningMessage(err.pid));
    throw err;
  }
}

/**
 * Lock the data dir and open its store; on a shared database, share this data dir's tokens with
 * the other controls. Whatever was taken is released again when a step fails.
 */
async function openLockedStore(config: Readonly<Config>, boot: BootstrapResult): Promise<{ store: Store; unlock: () => Promise<void> }> {
  const unlock = await lockDataDir(boot.dataDir);
  let store: Store;
  try {
    store = await openStore({
      dataDir: boot.dataDir,
      databasePath: boot.databasePath,
      databaseUrl: config.databaseUrl,
      receiptsCore: makeReceipts,
    });
  } catch (err) {
    await unlock();
    throw err;
  }
  if (store.cluster !== null) {
    try {
      await shareTokens(store.cluster, boot, Date.now());
    } catch (err) {
      await store.close();
      await unlock();
      throw err instanceof TokenConflictError ? new ControlStartError(err.message) : err;
    }
  }
  return { store, unlock };
}

/** The settler, leading alone on SQLite or by lease among the controls of a shared database. */
async function openSettler(ctx: ControlContext, config: Readonly<Config>): Promise<Settler> {
  const { store, log } = ctx;
  const { cadenceMs, batchCap, leaseS } = config.settler;
  const leadership =
    store.cluster === null
      ? soleLeadership(() => ({ id: ctx.controlId, url: ctx.urls.control }))
      : new LeaseLeadership({ cluster: store.cluster, id: ctx.controlId, leaseMs: leaseS * 1000, cadenceMs, log });
  return Settler.open({ store, log, now: ctx.now, cadenceMs, batchCap, leadership, chain: ctx.receiptChain });
}

/** Every route under `/_admin/`. */
function adminRouter(ctx: ControlContext, hub: SyncHub, settler: Settler): Router {
  const admin = new Router();
  registerKeyRoutes(admin, ctx);
  registerAccountRoutes(admin, ctx);
  registerLpRoutes(admin, ctx);
  registerFlagRoutes(admin, ctx);
  registerEndpointRoutes(admin, ctx);
  registerChangelogRoutes(admin, ctx);
  registerStatusRoutes(admin, ctx);
  registerApplicationAdminRoutes(admin, ctx);
  registerPropagationRoutes(admin, hub, ctx);
  registerSettlerRoutes(admin, ctx, settler);
  registerLedgerRoutes(admin, ctx);
  registerReceiptAdminRoutes(admin, ctx, settler);
  registerOperatorRoutes(admin, ctx);
  registerApprovalRoutes(admin, ctx);
  registerOpenApiRoute(admin);
  return admin;
}

/**
 * Control's own listener: `/_admin/` (operators' tokens), `/_sync/` (the sync token) and
 * `/metrics/` (the metrics token), each mount with its route table.
 */
function controlListener(
  ctx: ControlContext,
  boot: BootstrapResult,
  routers: ControlHandle['routers'],
): ReturnType<typeof requestListener> {
  const { store, log } = ctx;
  const syncAuth = new TokenAuth('sync', [{ name: 'sync', digest: boot.syncToken.digest }]);
  const metricsAuth = new TokenAuth('metrics', [{ name: 'metrics', digest: boot.metricsToken.digest }]);
  // Root's token from the environment has its own id in the audit trail; one made by another control is the data dir's.
  const rootTokenId = boot.adminToken.file === null && boot.adminToken.token !== null ? ROOT_ENV_TOKEN_ID : ROOT_TOKEN_ID;
  const adminAuth = new AdminAuth({ store, now: ctx.now, log, root: { digest: boot.adminToken.digest, tokenId: rootTokenId } });
  const adminMount: Mount<Operator> = {
    prefix: '/_admin/',
    router: routers.admin,
    authenticate: (req) => adminAuth.authenticate(req),
    authorize: (operator, route) => adminAuth.authorize(operator, route),
  };
  return requestListener(
    [
      adminMount,
      { prefix: '/_sync/', router: routers.sync, authenticate: (req) => ({ actor: syncAuth.authenticate(req), tokenId: null }) },
      {
        prefix: '/metrics/',
        router: routers.metrics,
        authenticate: (req) => ({ actor: metricsAuth.authenticate(req), tokenId: null }),
      },
    ],
    log,
  );
}

/** Atomically publish where this control listens, for `svcctl` with port 0 or a custom config. */
function publishRuntime(runtimePath: string, ctx: ControlContext): void {
  const tmp = `${runtimePath}.${process.pid}.tmp`;
  const runtime: RuntimeInfo = { pid: process.pid, urls: { ...ctx.urls }, started_at: new Date(ctx.startedAt).toISOString() };
  writeFileSync(tmp, JSON.stringify(runtime) + '\n', {
    mode: 0o600,
  });
  renameSync(tmp, runtimePath);
}

/**
 * Start control: bootstrap the data dir, lock it and open the store, the sync hub and the
 * settler, the route tables, then bind the three listeners, join the cluster, start settling and
 * publish where it listens.
 */
export async function startControl(config: Readonly<Config>, options: StartOptions = {}): Promise<ControlHandle> {
  const log = options.log ?? createLogger({ level: config.logLevel, base: { role: 'control' } });
  const boot = bootstrapDataDir(config);
  const { store, unlock } = await openLockedStore(config, boot);
  const ctx: ControlContext = {
    store,
    config,
    log,
    now: options.now ?? Date.now,
    urls: { control: '', api: '', indexer: '' },
    startedAt: Date.now(),
    dataDir: boot.dataDir,
    controlId: boot.controlId,
    gateways: () => Promise.resolve([]),
    settler: () => null,
    receiptChain: new ReceiptChainGuard(store.receipts, log),
  };

  const limits = limitsFromConfig(config);
  await recordLimits(store, limits, ctx.now());
  const hub = await SyncHub.open(ctx, limits);
  // A gateway's workers one after another, each naming its gateway (`gateway`).
  ctx.gateways = async () => groupWorkers(await hub.status());
  const settler = await openSettler(ctx, config);
  ctx.settler = () => settler.status();

  const routers: ControlHandle['routers'] = { admin: adminRouter(ctx, hub, settler), sync: new Router(), metrics: new Router() };
  // Counted by the outcome route, read by the coverage loop (ingest-seq.ts).
  const ingest = new IngestCounter();
  registerSyncRoutes(routers.sync, ctx, hub, ingest);
  registerBudgetRoutes(routers.sync, ctx);
  registerMetricsRoutes(routers.metrics, ctx);

  const servers: Server[] = [];
  // Every listener answers parser errors, CONNECT, non-path targets and a missing or repeated Host as problem+json.
  const bind = async (listener: Parameters<typeof createServer>[1], port: number, allow: string): Promise<string> => {
    const server = configureServer(createServer(EDGE_SERVER_OPTIONS, edgeListener(listener!)));
    answerParserErrors(server, { allow });
    servers.push(server);
    return listen(server, port, config.host);
  };

  const runtimePath = join(boot.dataDir, RUNTIME_FILE);
  let membership: Membership | null = null;
  let refills: RefillLoop | null = null;
  let withdrawals: WithdrawalLoop | null = null;
  let coverage: CoverageLoop | null = null;
  const close = async (): Promise<void> => {
    await coverage?.stop();
    hub.close();
    await settler.stop();
    await refills?.stop();
    await withdrawals?.stop();
    await membership?.leave();
    await Promise.all(servers.map(closeServer));
    rmSync(runtimePath, { force: true });
    await store.close();
    await unlock();
  };

  try {
    ctx.urls.control = await bind(controlListener(ctx, boot, routers), config.control.port, 'GET, HEAD, POST, PUT, PATCH, DELETE');
    ctx.urls.api = await bind(publicListener(ctx, log, [registerApplicationRoutes]), config.api.port, 'GET, HEAD, POST');
    ctx.urls.indexer = await bind(indexerListener(ctx, log, [registerIndexerFeedRoutes]), config.indexer.port, 'GET, HEAD');
    membership = await joinCluster(ctx);
    await settler.start();
    refills = startRefills(ctx, options.refillCheckMs);
    withdrawals = startWithdrawals(ctx, options.withdrawalCheckMs);
    let last: Coverage | null = null;
    ctx.coverage = () => last;
    const loop = (coverage = startCoverage(
      ctx,
      ingest,
      (c, seen) => {
        last = c;
        hub.publishCoverage(c, seen);
      },
      options.coverageCheckMs,
    ));
    ctx.coverageChanged = () =>
      loop.runOnce().then(
        () => undefined,
        () => undefined,
      );
  } catch (err) {
    await close();
    throw err;
  }
  publishRuntime(runtimePath, ctx);

  log.info('control ready', { control_id: ctx.controlId, urls: ctx.urls, data_dir: boot.dataDir, state_version: hub.currentVersion() });
  return { ctx, bootstrap: boot, urls: ctx.urls, routers, refills, withdrawals, coverage, close };
}
