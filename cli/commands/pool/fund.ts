/** `svcctl pool fund AMOUNT [--note TEXT]`: external → pool. AMOUNT: see `cli/money.ts`. */
import type { FundView } from '../../../protocol/settlement';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { money } from '../../money';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';
import { poolLines } from './show';

export async function run(opts: { amount: string; note?: string; json?: boolean }, deps: Deps): Promise<number> {
  const amount = parseAmount('AMOUNT', opts.amount);
  const body: Record<string, unknown> = { amount };
  if (opts.note !== undefined) body.note = opts.note;
  const funded = await postMoney<FundView>(deps, '/_admin/v1/pool/fund', body, opts.json);
  if (funded === null) return EXIT_OK;
  if (opts.json) deps.out.json(funded);
  else for (const line of fundedLines(funded)) deps.out.line(line);
  return EXIT_OK;
}

export const fundedLines = (funded: FundView): string[] => [
  `Funded the pool with ${money(funded.amount)} (transfer ${funded.transfer_id}).`,
  ...poolLines(funded.pool),
];
