/** `svcctl ledger balances [--account A]`: account balances (external, pool, treasury, account:<id>, and key:<id> from before accounts). */
import type { BalancesView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { formatUnits } from '../../money';
import { table } from '../../output';

export async function run(opts: { account?: string; json?: boolean }, deps: Deps): Promise<number> {
  const query = opts.account === undefined ? '' : `?prefix=${encodeURIComponent(opts.account)}`;
  const { balances } = await deps.client.get<BalancesView>(`/_admin/v1/ledger/balances${query}`);
  const shown = opts.account === undefined ? balances : balances.filter((b) => b.account === opts.account || opts.account!.endsWith(':'));
  if (opts.json) deps.out.json({ balances: shown });
  else
    deps.out.line(
      shown.length === 0
        ? 'No such account.'
        : table(
            ['ACCOUNT', 'BALANCE', 'MICRO'],
            shown.map((b) => [b.account, formatUnits(b.balance), b.balance]),
          ),
    );
  return EXIT_OK;
}
