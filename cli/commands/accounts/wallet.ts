/**
 * `svcctl accounts wallet NAME ADDR` attaches or changes the account's payout wallet; `--detach`
 * removes it. With `money.approvals: 2` either waits for a second operator: the pending request
 * is printed.
 */
import type { AccountChange } from '../../../protocol/accounts';
import { WALLET_HELP, walletChain } from '../../../protocol/wallet';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { postMoney } from '../approvals/render';

export async function run(opts: { account: string; address?: string; detach?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  const path = `/_admin/v1/accounts/${encodeURIComponent(opts.account)}/wallet`;
  let account: AccountChange | null;
  if (opts.detach) {
    if (opts.address !== undefined) throw new UsageError('give either ADDR or --detach, not both');
    account = await postMoney<AccountChange>(deps, path, undefined, opts.json, 'DELETE');
  } else {
    if (opts.address === undefined) throw new UsageError('missing ADDR (or use --detach)');
    if (walletChain(opts.address.trim()) === null) throw new UsageError(`${JSON.stringify(opts.address)} is not ${WALLET_HELP}`);
    account = await postMoney<AccountChange>(deps, path, { wallet: opts.address.trim() }, opts.json, 'PUT');
  }
  if (account === null) return EXIT_OK;
  if (opts.json) deps.out.json(account);
  else deps.out.line(accountWalletLine(account));
  return EXIT_OK;
}

export const accountWalletLine = (account: AccountChange): string =>
  account.wallet ? `${account.name} pays out to ${account.wallet}.` : `${account.name} has no wallet; refunds accrue to the account.`;
