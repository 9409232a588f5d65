/**
 * `svcctl stats`: the indexer's `/api/stats` (pool, settlement totals, calls, recent
 * activity). The indexer's URL comes from control's admin status (`urls.indexer`); the
 * indexer is public, so the admin token is never sent to it.
 */
import type { StatusView } from '../../protocol/admin';
import type { StatsAnswer } from '../../protocol/indexer';
import type { Deps } from '../deps';
import { CliError, EXIT_OK } from '../exit-codes';
import { formatUnits } from '../money';
import { table } from '../output';

/** Milliseconds to wait for the indexer. @default 10000 */
export const STATS_TIMEOUT_MS = 10_000;

/** Units as `svcctl pool show` writes them (`12.5`); `-` for a call not settled yet. */
const money = (micro: number | null): string => (micro === null ? '-' : formatUnits(micro));

async function fetchStats(indexer: string): Promise<StatsAnswer> {
  const url = `${indexer.replace(/\/+$/, '')}/api/stats`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(STATS_TIMEOUT_MS) });
  } catch (err) {
    const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${STATS_TIMEOUT_MS} ms` : 'connection failed';
    throw new CliError(`indexer not reachable at ${indexer} (${reason})`);
  }
  const text = await res.text();
  if (!res.ok) throw new CliError(`indexer at ${indexer} answered ${res.status} ${res.statusText}`);
  try {
    return JSON.parse(text) as StatsAnswer;
  } catch {
    throw new CliError(`indexer at ${indexer} answered with a body that is not JSON`);
  }
}

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const status = await deps.client.get<StatusView>('/_admin/v1/status');
  if (!status.urls.indexer) throw new CliError('control reports no indexer URL');
  const stats = await fetchStats(status.urls.indexer);
  if (opts.json) {
    deps.out.json(stats);
    return EXIT_OK;
  }
  deps.out.line(`indexer          ${status.urls.indexer} (as of ${stats.updated_at})`);
  deps.out.line(`pool size        ${money(stats.pool_size)}`);
  deps.out.line(`settled batches  ${stats.settled_batches} (${stats.settled_calls} calls)`);
  deps.out.line(`total premiums   ${money(stats.total_premiums)}`);
  deps.out.line(`total refunds    ${money(stats.total_refunds)}`);
  deps.out.line(`total calls      ${stats.total_calls} (${stats.unsettled_calls} not settled yet)`);
  deps.out.line(`settler          ${stats.settler.replace('_', ' ')}`);
  if (stats.recent_activity.length === 0) deps.out.line('recent activity  none settled yet');
  else {
    deps.out.line('recent activity (settled calls):');
    deps.out.line(
      table(
        ['AT', 'PROVIDER', 'OUTCOME', 'STATUS', 'LATENCY MS', 'PREMIUM', 'REFUND', 'BATCH', 'CALL'],
        stats.recent_activity.map((a) => [
          a.at,
          a.provider,
          a.outcome,
          a.status,
          a.latency_ms,
          money(a.premium),
          money(a.refund),
          a.batch,
          a.call_id,
        ]),
      ),
    );
  }
  return EXIT_OK;
}
