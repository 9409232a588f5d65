/**
 * `svcctl stats`: the indexer's `/api/stats` (pool, settlement totals, calls, recent
 * activity). The indexer's URL comes from control's admin status (`urls.indexer`); the
 * indexer is public, so the admin token is never sent to it.
 */
import type { StatsAnswer } from '../../protocol/indexer';
import type { Deps } from '../deps';
import { EXIT_OK } from '../exit-codes';
import { formatUnits } from '../money';
import { table } from '../output';

/** Units as `svcctl pool show` writes them (`12.5`); `-` for a call not settled yet. */
const money = (micro: number | null): string => (micro === null ? '-' : formatUnits(micro));

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const indexer = await deps.indexer.resolve(deps.client, undefined);
  const stats = await deps.indexer.get<StatsAnswer>(`${indexer}/api/stats`);
  if (opts.json) {
    deps.out.json(stats);
    return EXIT_OK;
  }
  deps.out.line(`indexer          ${indexer} (as of ${stats.updated_at})`);
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
