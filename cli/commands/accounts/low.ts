/**
 * `svcctl accounts low NAME AMOUNT` sets the account's low-balance threshold: the agent's account
 * answer shows `low: true` while its available balance is under it. `--clear` removes it.
 */
import type { AccountChange, UpdateAccountRequest } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { money } from '../../money';
import { parseAmount } from '../../options';

export async function run(opts: { account: string; amount?: string; clear?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  if (opts.clear === true && opts.amount !== undefined) throw new UsageError('give either AMOUNT or --clear, not both');
  if (opts.clear !== true && opts.amount === undefined) throw new UsageError('missing AMOUNT (or use --clear)');
  const body: UpdateAccountRequest = { low: opts.clear === true ? null : parseAmount('AMOUNT', opts.amount!) };
  const account = await deps.client.patch<AccountChange>(`/_admin/v1/accounts/${encodeURIComponent(opts.account)}`, body);
  if (opts.json) deps.out.json(account);
  else
    deps.out.line(
      account.low === null ? `${account.name} has no low-balance threshold.` : `${account.name} is low below ${money(account.low)}.`,
    );
  return EXIT_OK;
}
