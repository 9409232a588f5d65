/** `/_admin/v1/status`: control's own view of itself, used by `svcctl status`. */
import type { StatusView } from '../../protocol/admin';
import { sendJson } from '../../runtime/http';
import { settlerView, type ControlContext } from '../context';
import { controlsView } from '../cluster';
import type { Router } from '../http/router';

export async function statusView(ctx: ControlContext): Promise<StatusView> {
  const now = ctx.now();
  const counts = await ctx.store.keys.counts(now);
  const gateways = await ctx.gateways();
  const pool = await ctx.store.ledger.poolSize();
  const store = await ctx.store.describe();
  const endpoints = await ctx.store.endpoints.count();
  return {
    status: 'ok',
    control_id: ctx.controlId,
    version: await ctx.store.version(),
    started_at: new Date(ctx.startedAt).toISOString(),
    data_dir: ctx.dataDir,
    store,
    urls: { ...ctx.urls },
    counts: { keys_active: counts.active, keys_total: counts.total, endpoints },
    flags: await ctx.store.flags.values(),
    gateways,
    controls: await controlsView(ctx),
    bootstrap: {
      database_ready: store.schema_version === store.schema_expected,
      pool_funded: pool > 0,
      pool_balance: pool,
      endpoints,
      gateways_connected: gateways.filter((g) => g.connected).length,
      gateways_known: gateways.length,
    },
    settler: await settlerView(ctx),
  };
}

export function registerStatusRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/status', async ({ res }) => sendJson(res, 200, (await statusView(ctx)) satisfies StatusView));
}
