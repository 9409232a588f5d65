/** `svcctl payouts list [--wallet ADDR]`: what is owed per wallet, and to accounts without a wallet yet. */
import type { PayoutsView } from '../../../protocol/settlement';
import { WALLET_HELP, walletChain } from '../../../protocol/wallet';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { formatUnits, money } from '../../money';
import { table } from '../../output';

export async function run(opts: { wallet?: string; json?: boolean }, deps: Deps): Promise<number> {
  let query = '';
  if (opts.wallet !== undefined) {
    if (walletChain(opts.wallet.trim()) === null) throw new UsageError(`--wallet ${JSON.stringify(opts.wallet)} is not ${WALLET_HELP}`);
    query = `?wallet=${encodeURIComponent(opts.wallet.trim())}`;
  }
  const view = await deps.client.get<PayoutsView>(`/_admin/v1/payouts${query}`);
  if (opts.json) {
    deps.out.json(view);
    return EXIT_OK;
  }
  if (view.payouts.length === 0) deps.out.line('Nothing is owed.');
  else {
    deps.out.line(
      table(
        ['WALLET', 'OWED', 'MICRO', 'ACCOUNTS'],
        view.payouts.map((p) => [p.wallet ?? '(no wallet yet)', formatUnits(p.owed), p.owed, p.keys.map((k) => k.id).join(', ')]),
      ),
    );
    deps.out.line(`Total owed: ${money(view.total_owed)}`);
  }
  return EXIT_OK;
}
