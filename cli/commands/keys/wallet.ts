/**
 * `svcctl keys wallet ID ADDR` attaches or changes the payout wallet; `--detach` removes it.
 * With `money.approvals: 2` either waits for a second operator: the pending request is printed.
 */
import type { KeyChange } from '../../../protocol/admin';
import { WALLET_HELP, walletChain } from '../../../protocol/wallet';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { postMoney } from '../approvals/render';

export async function run(opts: { id: string; address?: string; detach?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  const path = `/_admin/v1/keys/${encodeURIComponent(opts.id)}/wallet`;
  let key: KeyChange | null;
  if (opts.detach) {
    if (opts.address !== undefined) throw new UsageError('give either ADDR or --detach, not both');
    key = await postMoney<KeyChange>(deps, path, undefined, opts.json, 'DELETE');
  } else {
    if (opts.address === undefined) throw new UsageError('missing ADDR (or use --detach)');
    if (walletChain(opts.address.trim()) === null) throw new UsageError(`${JSON.stringify(opts.address)} is not ${WALLET_HELP}`);
    key = await postMoney<KeyChange>(deps, path, { wallet: opts.address.trim() }, opts.json, 'PUT');
  }
  if (key === null) return EXIT_OK;
  if (opts.json) deps.out.json(key);
  else for (const line of walletLines(key)) deps.out.line(line);
  return EXIT_OK;
}

export const walletLines = (key: KeyChange): string[] => [
  key.wallet
    ? `${key.id}'s account (${key.account_id}) pays out to ${key.wallet}.`
    : `${key.id} has no wallet; refunds accrue to its account (${key.account_id}).`,
];
