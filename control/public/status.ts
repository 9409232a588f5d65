/**
 * What the status page and `GET /api/v1/status` report (docs/design.md §7): the bootstrap state
 * (database, pool funding, endpoints, gateways and the state version each has applied), the
 * settler (or "not running" while no settler runs in this process), the beta gate,
 * maintenance mode with its note, and the latest changelog entries. Ids are opaque.
 */
import type { StatusAnswer } from '../../protocol/public';
import { settlerView, type ControlContext } from '../context';
import type { OpaqueIds } from '../../protocol/opaque-ids';
import { publicChangelog } from './reads';
import { publicPool } from '../pool';

export async function statusAnswer(ctx: ControlContext, ids: OpaqueIds): Promise<StatusAnswer> {
  const now = ctx.now();
  const store = ctx.store;
  const stateVersion = await store.version();
  const gateways = await ctx.gateways();
  const capital = await publicPool(ctx);
  const pool = capital.capital;
  const gate = await store.flags.get('beta_gate_enabled');
  const maintenance = await store.flags.get('maintenance_mode');
  const settler = await settlerView(ctx);
  const connected = gateways.filter((g) => g.connected).length;
  const { schema_version: schemaVersion, schema_expected: schemaExpected } = await store.describe();

  return {
    status: maintenance?.value ? 'maintenance' : connected === 0 ? 'degraded' : 'operational',
    version: 'v1',
    updated_at: new Date(now).toISOString(),
    bootstrap: {
      database: { ready: schemaVersion === schemaExpected, schema_version: schemaVersion, schema_expected: schemaExpected },
      pool: { funded: pool > 0, balance: pool, capital },
      endpoints: { registered: await store.endpoints.count() },
      state_version: stateVersion,
      gateways: {
        connected,
        known: gateways.length,
        list: gateways.map((g) => ({
          id: ids.gateway(g.id),
          connected: g.connected,
          snapshot_version: g.applied_version,
          versions_behind: Math.max(0, stateVersion - g.applied_version),
          last_seen: g.last_seen,
          seen_ago_s: Math.max(0, Math.round((now - Date.parse(g.last_seen)) / 1000)),
        })),
      },
    },
    settler: {
      state: settler.state,
      cadence_ms: settler.cadence_ms,
      batch_cap: settler.batch_cap,
      backlog: settler.backlog,
      lag_ms: settler.lag_ms,
      last_run_at: settler.last_run_at,
      last_batch: settler.last_batch && {
        id: settler.last_batch.id,
        provider: ids.provider(settler.last_batch.endpoint_id),
        calls: settler.last_batch.calls,
        refunds: settler.last_batch.refunds,
        premiums: settler.last_batch.premiums,
        at: settler.last_batch.at,
      },
    },
    beta_gate: { enabled: gate?.value ?? false, since: gate?.updated_at ?? null },
    maintenance: {
      enabled: maintenance?.value ?? false,
      note: maintenance?.value ? maintenance.note : null,
      since: maintenance?.value ? maintenance.updated_at : null,
    },
    changelog: await publicChangelog(store, ctx.config.public.statusChangelogEntries),
  };
}
