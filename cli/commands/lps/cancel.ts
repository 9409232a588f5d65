/**
 * `svcctl lps cancel ID`: a pending withdrawal cancelled; what was paid of it stays paid. One
 * paid or cancelled already is refused (409). With `money.approvals: 2` it waits for a second
 * operator: the pending request is printed.
 */
import type { WithdrawalView } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { postMoney } from '../approvals/render';
import { cancelledLines } from './render';

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  if (!/^[1-9][0-9]{0,14}$/.test(opts.id.trim()))
    throw new UsageError(`ID must be a withdrawal id (a whole number from 1), got ${JSON.stringify(opts.id)}`);
  const cancelled = await postMoney<WithdrawalView>(deps, `/_admin/v1/lp-withdrawals/${opts.id.trim()}/cancel`, {}, opts.json);
  if (cancelled === null) return EXIT_OK;
  if (opts.json) deps.out.json(cancelled);
  else for (const line of cancelledLines(cancelled)) deps.out.line(line);
  return EXIT_OK;
}
