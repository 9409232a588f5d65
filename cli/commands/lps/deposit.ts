/**
 * `svcctl lps deposit NAME AMOUNT --reference REF`: money into a provider's position
 * (external → pool), minting its shares at the value a share has then; once per reference: the
 * same reference and amount again prints the first deposit and moves nothing. AMOUNT: see
 * `cli/money.ts`. With `money.approvals: 2` it waits for a second operator: the pending request
 * is printed.
 */
import type { LpDepositRequest, LpDepositView } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';
import { lpDepositLines } from './render';

export async function run(opts: { name: string; amount: string; reference: string; json?: boolean }, deps: Deps): Promise<number> {
  const body: LpDepositRequest = { amount: parseAmount('AMOUNT', opts.amount), reference: opts.reference.trim() };
  if (body.reference === '') throw new UsageError('--reference must not be empty');
  const made = await postMoney<LpDepositView>(deps, `/_admin/v1/lps/${encodeURIComponent(opts.name)}/deposit`, body, opts.json);
  if (made === null) return EXIT_OK;
  if (opts.json) deps.out.json(made);
  else for (const line of lpDepositLines(made)) deps.out.line(line);
  return EXIT_OK;
}
