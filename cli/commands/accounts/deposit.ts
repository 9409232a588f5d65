/**
 * `svcctl accounts deposit NAME AMOUNT --reference REF [--wait]`: an operator's deposit into an
 * account (external → account), once per reference: the same reference and amount again prints
 * the first deposit and moves nothing. AMOUNT: see `cli/money.ts`. With `--wait` it returns once
 * every connected gateway has heard of it (a gateway that found the account short admits its
 * calls again). With `money.approvals: 2` it waits for a second operator: the pending request is
 * printed (and nothing is waited for).
 */
import type { DepositRequest, DepositView } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { money } from '../../money';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';
import { waitForVersion } from '../wait';

export async function run(
  opts: { account: string; amount: string; reference: string; wait?: boolean; timeout?: string; json?: boolean },
  deps: Deps,
): Promise<number> {
  const body: DepositRequest = { amount: parseAmount('AMOUNT', opts.amount), reference: opts.reference.trim() };
  if (body.reference === '') throw new UsageError('--reference must not be empty');
  const path = `/_admin/v1/accounts/${encodeURIComponent(opts.account)}/deposit`;
  const made = await postMoney<DepositView>(deps, path, body, opts.json);
  if (made === null) return EXIT_OK;
  const waited = opts.wait ? await waitForVersion(deps, made.version, opts.timeout) : null;
  if (opts.json) deps.out.json({ ...made, ...(waited ? { propagation: waited } : {}) });
  else {
    for (const line of depositLines(made)) deps.out.line(line);
    if (waited) deps.out.line(`All ${waited.gateways} connected gateway(s) know of it.`);
  }
  return EXIT_OK;
}

export const depositLines = (d: DepositView): string[] => [
  d.created
    ? `Deposited ${money(d.amount)} into ${d.account_id} (transfer ${d.transfer_id}, reference ${d.reference}).`
    : `Reference ${d.reference} was deposited before (transfer ${d.transfer_id}, ${money(d.amount)}): nothing moved.`,
  `Balance: ${money(d.balance)}`,
];
