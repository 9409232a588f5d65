/**
 * `svcctl lps withdraw NAME AMOUNT|--all`: a withdrawal queued; it is paid from free capital,
 * oldest due first, once `pool.withdrawalNoticeH` has passed. `--all` asks for the whole
 * position at its value when each payment is made. AMOUNT: see `cli/money.ts`. With
 * `money.approvals: 2` it waits for a second operator: the pending request is printed.
 */
import type { WithdrawRequest, WithdrawalView } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';
import { withdrawnLines } from './render';

export async function run(opts: { name: string; amount?: string; all?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  if (opts.all === true && opts.amount !== undefined) throw new UsageError('give either AMOUNT or --all, not both');
  if (opts.all !== true && opts.amount === undefined) throw new UsageError('missing AMOUNT (or use --all)');
  const body: WithdrawRequest = opts.all === true ? { all: true } : { amount: parseAmount('AMOUNT', opts.amount!) };
  const path = `/_admin/v1/lps/${encodeURIComponent(opts.name)}/withdrawals`;
  const requested = await postMoney<WithdrawalView>(deps, path, body, opts.json);
  if (requested === null) return EXIT_OK;
  if (opts.json) deps.out.json(requested);
  else for (const line of withdrawnLines(requested)) deps.out.line(line);
  return EXIT_OK;
}
