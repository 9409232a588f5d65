/** `/_admin/v1/status`: control's own view of itself, used by `svcctl status`. */
import type { StatusView } from '../../protocol/admin';
import { sendJson } from '../../protocol/http';
import { MIGRATIONS } from '../store/migrations';
import type { ControlContext } from '../context';
import { settlerView } from '../settler/view';
import type { Router } from '../http/router';

export function statusView(ctx: ControlContext): StatusView {
  const now = ctx.now();
  const counts = ctx.store.keys.counts(now);
  const syncValue = Number(ctx.store.pragma('synchronous'));
  const gateways = ctx.gateways();
  const pool = ctx.store.ledger.poolSize();
  const schemaVersion = ctx.store.schemaVersion();
  const endpoints = ctx.store.endpoints.count();
  return {
    status: 'ok',
    version: ctx.store.version(),
    started_at: new Date(ctx.startedAt).toISOString(),
    data_dir: ctx.dataDir,
    database: {
      path: ctx.store.path,
      journal_mode: String(ctx.store.pragma('journal_mode')),
      synchronous: ['off', 'normal', 'full', 'extra'][syncValue] ?? String(syncValue),
      schema_version: schemaVersion,
    },
    urls: { ...ctx.urls },
    counts: { keys_active: counts.active, keys_total: counts.total, endpoints },
    flags: ctx.store.flags.values(),
    gateways,
    bootstrap: {
      database_ready: schemaVersion === MIGRATIONS.length,
      pool_funded: pool > 0,
      pool_balance: pool,
      endpoints,
      gateways_connected: gateways.filter((g) => g.connected).length,
      gateways_known: gateways.length,
    },
    settler: settlerView(ctx),
  };
}

export function registerStatusRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/status', ({ res }) => sendJson(res, 200, statusView(ctx) satisfies StatusView));
}
