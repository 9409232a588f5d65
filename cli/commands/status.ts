/** `svcctl status`: control, its listeners, the controls sharing its database, flags, counts, bootstrap, the settler and every gateway's engine and applied version. */
import { FLAG_NAMES, type StatusView, type StoreStatus } from '../../protocol/admin';
import { maskDatabaseUrl } from '../../protocol/database-url';
import { settlerHaltWayOut } from '../../protocol/settlement';
import type { Deps } from '../deps';
import { EXIT_OK } from '../exit-codes';
import { formatUnits } from '../money';
import { table } from '../output';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const status = await deps.client.get<StatusView>('/_admin/v1/status');
  if (opts.json) {
    deps.out.json(status);
    return EXIT_OK;
  }
  const on = (v: boolean) => (v ? 'on' : 'off');
  deps.out.line(`control        ${status.status} at ${deps.client.baseUrl} (${status.control_id}, up since ${status.started_at})`);
  deps.out.line(`public api     ${status.urls.api}`);
  deps.out.line(`indexer        ${status.urls.indexer}`);
  deps.out.line(`state version  ${status.version}`);
  deps.out.line(`store          ${storeLine(status.store)}`);
  deps.out.line(`flags          ${FLAG_NAMES.map((name) => `${name}=${on(status.flags[name])}`).join(' ')}`);
  deps.out.line(`keys           ${status.counts.keys_active} active of ${status.counts.keys_total}`);
  deps.out.line(`endpoints      ${status.counts.endpoints}`);
  const b = status.bootstrap;
  const missing = [
    !b.pool_funded && 'fund the pool (svcctl pool fund AMOUNT)',
    b.endpoints === 0 && 'add an endpoint',
    b.gateways_connected === 0 && 'start a gateway',
  ].filter(Boolean);
  deps.out.line(
    `bootstrap      pool ${b.pool_funded ? `funded (${formatUnits(b.pool_balance)})` : 'not funded'}, ${b.endpoints} endpoint(s), ${b.gateways_connected} of ${b.gateways_known} gateway(s) connected${missing.length ? `; next: ${missing.join(', ')}` : ''}`,
  );
  const s = status.settler;
  const last =
    s.last_batch === null
      ? 'no batch yet'
      : `last batch #${s.last_batch.id} (${s.last_batch.endpoint_id}, ${s.last_batch.calls} calls, refunds ${formatUnits(s.last_batch.refunds)}) at ${s.last_batch.at}`;
  deps.out.line(
    `settler        ${s.state}, backlog ${s.backlog}${s.lag_ms !== null ? ` (oldest ${Math.round(s.lag_ms / 1000)} s)` : ''}, ${last}${s.last_error ? `; last error: ${s.last_error}` : ''}`,
  );
  if (s.halted !== null) deps.out.line(`               halted: ${s.halted.reason}; ${settlerHaltWayOut(s.halted)}`);
  const cluster = status.controls.length > 1 || status.store.kind === 'postgres';
  if (cluster) {
    deps.out.line('controls:');
    deps.out.line(
      table(
        ['ID', 'URL', 'LEADER', 'LAST SEEN'],
        status.controls.map((c) => [c.id, c.url, c.leader ? 'yes' : 'no', c.last_seen]),
      ),
    );
  }
  if (status.gateways.length === 0) deps.out.line('gateways       none connected');
  else {
    deps.out.line('gateways:');
    // Which control each is attached to, where there may be several.
    const head = ['ID', 'CONNECTED', ...(cluster ? ['CONTROL'] : []), 'ENGINE', 'APPLIED', 'BEHIND', 'LAST SEEN', 'LAST NACK'];
    deps.out.line(
      table(
        head,
        status.gateways.map((g) => [
          g.id,
          g.connected ? 'yes' : 'no',
          ...(cluster ? [g.control_id] : []),
          g.engine,
          g.applied_version,
          status.version - g.applied_version,
          g.last_seen,
          g.last_nack,
        ]),
      ),
    );
  }
  return EXIT_OK;
}

/** `sqlite /data/control.db (wal, synchronous=full, schema v14 of 14)` or `postgres postgres://u:***@h:5432/db (schema v3 of 4)`. */
function storeLine(store: StoreStatus): string {
  const schema = `schema v${store.schema_version} of ${store.schema_expected}`;
  if (store.kind === 'sqlite') return `sqlite ${store.path} (${store.journal_mode}, synchronous=${store.synchronous}, ${schema})`;
  return `postgres ${maskDatabaseUrl(store.url)} (${schema})`;
}
