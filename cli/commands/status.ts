/**
 * `svcctl status`: control, its listeners, the controls sharing its database, flags, counts,
 * bootstrap, the settler and every gateway's engine and applied version. While control cannot
 * reach its database, what it can say: control answers, the store does not (which one, its
 * URL's password masked), with exit code 3 (`EXIT_STORE_UNAVAILABLE`).
 */
import { FLAG_NAMES, type StatusView, type StoreStatus } from '../../protocol/admin';
import { groupWorkers } from '../../protocol/gateways';
import { countOf, latestOf, nestedRows } from './gateways/render';
import { maskDatabaseUrl } from '../../protocol/database-url';
import { ApiError } from '../client';
import { settlerHaltWayOut } from '../../protocol/settlement';
import type { Deps } from '../deps';
import { EXIT_OK, EXIT_STORE_UNAVAILABLE } from '../exit-codes';
import { formatUnits } from '../money';
import { table } from '../output';

/** `svcctl status --json` while control cannot reach its database. */
export interface StoreUnavailableStatus {
  status: 'store_unavailable';
  control: { url: string; reachable: true };
  /** `kind` and `url` (password masked) as control's problem names them; null when it names none. */
  store: { kind: string | null; url: string | null; reachable: false; reason: string | null };
  /** Control's answer as it came (503 `svc_store_unavailable`). */
  problem: ApiError['problem'];
}

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  let status: StatusView;
  try {
    status = await deps.client.get<StatusView>('/_admin/v1/status');
  } catch (err) {
    if (err instanceof ApiError && err.problem.code === 'svc_store_unavailable') return storeUnavailable(err.problem, opts, deps);
    throw err;
  }
  if (opts.json) {
    // Each gateway gains `gateway`: for a worker, the gateway it belongs to; null for a gateway of its own.
    deps.out.json({ ...status, gateways: groupWorkers(status.gateways) });
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
        nestedRows(
          status.gateways,
          (g) => [
            g.id,
            g.connected ? 'yes' : 'no',
            ...(cluster ? [g.control_id] : []),
            g.engine,
            g.applied_version,
            status.version - g.applied_version,
            g.last_seen,
            g.last_nack,
          ],
          (_gateway, workers) => {
            const applied = Math.min(...workers.map((w) => w.applied_version));
            const nack = workers.find((w) => w.last_nack !== null);
            return [
              `${countOf(workers, (w) => w.connected)} workers`,
              ...(cluster ? [''] : []),
              workers[0]!.engine,
              applied,
              status.version - applied,
              latestOf(workers.map((w) => w.last_seen)),
              nack === undefined ? null : `${nack.id}: ${nack.last_nack}`,
            ];
          },
        ),
      ),
    );
  }
  return EXIT_OK;
}

/** What control said when it could not reach its store: it is up, the store is not. */
function storeUnavailable(problem: ApiError['problem'], opts: { json?: boolean }, deps: Deps): number {
  const named = typeof problem.store === 'object' && problem.store !== null ? (problem.store as Record<string, unknown>) : {};
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  // Masked again: a URL from the answer is printed only as svc prints database URLs.
  const url = text(named.url);
  const view: StoreUnavailableStatus = {
    status: 'store_unavailable',
    control: { url: deps.client.baseUrl, reachable: true },
    store: { kind: text(named.kind), url: url === null ? null : maskDatabaseUrl(url), reachable: false, reason: text(named.reason) },
    problem,
  };
  if (opts.json) {
    deps.out.json(view);
    return EXIT_STORE_UNAVAILABLE;
  }
  const which = view.store.kind === null ? 'the store' : `${view.store.kind}${view.store.url === null ? '' : ` ${view.store.url}`}`;
  deps.out.line(`control        up at ${deps.client.baseUrl}`);
  deps.out.line(`store          unreachable: ${which}${view.store.reason === null ? '' : ` (${view.store.reason})`}`);
  deps.out.line(`               control answers 503 ${problem.code} until it reaches its database again; nothing else can be shown`);
  return EXIT_STORE_UNAVAILABLE;
}

/** `sqlite /data/control.db (wal, synchronous=full, schema v14 of 14)` or `postgres postgres://u:***@h:5432/db (schema v3 of 4)`. */
function storeLine(store: StoreStatus): string {
  const schema = `schema v${store.schema_version} of ${store.schema_expected}`;
  if (store.kind === 'sqlite') return `sqlite ${store.path} (${store.journal_mode}, synchronous=${store.synchronous}, ${schema})`;
  return `postgres ${maskDatabaseUrl(store.url)} (${schema})`;
}
