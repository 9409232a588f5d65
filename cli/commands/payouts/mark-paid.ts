/** `svcctl payouts mark-paid --wallet ADDR --amount N --reference REF`: record an external payment. */
import type { MarkPaidView } from '../../../protocol/settlement';
import { WALLET_HELP, walletChain } from '../../../protocol/wallet';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { money } from '../../money';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';

export async function run(opts: { wallet: string; amount: string; reference: string; json?: boolean }, deps: Deps): Promise<number> {
  const wallet = opts.wallet.trim();
  if (walletChain(wallet) === null) throw new UsageError(`--wallet ${JSON.stringify(opts.wallet)} is not ${WALLET_HELP}`);
  const amount = parseAmount('--amount', opts.amount);
  const reference = opts.reference.trim();
  if (reference === '') throw new UsageError('--reference must not be empty');
  const paid = await postMoney<MarkPaidView>(deps, '/_admin/v1/payouts/mark-paid', { wallet, amount, reference }, opts.json);
  if (paid === null) return EXIT_OK;
  if (opts.json) deps.out.json(paid);
  else for (const line of paidLines(paid)) deps.out.line(line);
  return EXIT_OK;
}

export const paidLines = (paid: MarkPaidView): string[] => [
  `Recorded ${money(paid.amount)} paid to ${paid.wallet} (reference ${paid.reference}, transfer ${paid.transfer_id}).`,
  ...paid.paid.map((p) => `  from ${p.account_id}: ${money(p.amount)}`),
  `Still owed: ${money(paid.owed)}`,
];
