/** `svcctl lps withdrawals [--pending] [--provider NAME]`: the withdrawal queue, oldest first, and the pool's capital. */
import type { WithdrawalList } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { poolCapitalLine, withdrawalsTable } from './render';

export async function run(opts: { pending?: boolean; provider?: string; json?: boolean }, deps: Deps): Promise<number> {
  const query = new URLSearchParams();
  if (opts.pending === true) query.set('pending', 'true');
  if (opts.provider !== undefined) {
    if (opts.provider.trim() === '') throw new UsageError('--provider must name a provider');
    query.set('provider', opts.provider.trim());
  }
  const list = await deps.client.get<WithdrawalList>(`/_admin/v1/lp-withdrawals${query.size > 0 ? `?${query.toString()}` : ''}`);
  if (opts.json) deps.out.json(list);
  else {
    deps.out.line(
      list.withdrawals.length === 0 ? (opts.pending ? 'No pending withdrawals.' : 'No withdrawals.') : withdrawalsTable(list.withdrawals),
    );
    deps.out.line();
    deps.out.line(poolCapitalLine(list.pool));
  }
  return EXIT_OK;
}
