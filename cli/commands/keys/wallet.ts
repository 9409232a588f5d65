/** `svcctl keys wallet ID ADDR` attaches or changes the payout wallet; `--detach` removes it. */
import type { KeyChange } from '../../../protocol/admin';
import { WALLET_HELP, walletChain } from '../../../protocol/wallet';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';

export async function run(opts: { id: string; address?: string; detach?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  const path = `/_admin/v1/keys/${encodeURIComponent(opts.id)}/wallet`;
  let key: KeyChange;
  if (opts.detach) {
    if (opts.address !== undefined) throw new UsageError('give either ADDR or --detach, not both');
    key = await deps.client.delete<KeyChange>(path);
  } else {
    if (opts.address === undefined) throw new UsageError('missing ADDR (or use --detach)');
    if (walletChain(opts.address.trim()) === null) throw new UsageError(`${JSON.stringify(opts.address)} is not ${WALLET_HELP}`);
    key = await deps.client.put<KeyChange>(path, { wallet: opts.address.trim() });
  }
  if (opts.json) deps.out.json(key);
  else deps.out.line(key.wallet ? `${key.id} pays out to ${key.wallet}.` : `${key.id} has no wallet; refunds accrue to the key.`);
  return EXIT_OK;
}
