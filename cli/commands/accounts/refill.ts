/**
 * `svcctl accounts refill NAME AMOUNT --every day|month [--day 1-31]` sets the account's refill
 * rule: its available balance brought up to AMOUNT once a period, and at once for the current
 * period; `--never` clears it. AMOUNT: see `cli/money.ts`. With `money.approvals: 2` either waits
 * for a second operator: the pending request is printed.
 */
import type { AccountChange, RefillChange, RefillRequest } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { money } from '../../money';
import { parseAmount } from '../../options';
import { postMoney } from '../approvals/render';

export interface RefillOptions {
  account: string;
  amount?: string;
  every?: string;
  day?: string;
  never?: boolean;
  json?: boolean;
}

/** The rule the options give, or a usage error naming what is wrong. */
export function refillRule(opts: RefillOptions): RefillRequest {
  if (opts.amount === undefined) throw new UsageError('missing AMOUNT (or use --never)');
  if (opts.every !== 'day' && opts.every !== 'month') throw new UsageError('--every must be day or month');
  const rule: RefillRequest = { amount: parseAmount('AMOUNT', opts.amount), every: opts.every };
  if (opts.day !== undefined) {
    if (opts.every !== 'month') throw new UsageError('--day is only for --every month');
    const day = /^\d{1,2}$/.test(opts.day) ? Number(opts.day) : NaN;
    if (!(day >= 1 && day <= 31)) throw new UsageError('--day must be a day of the month, 1 to 31 (the last day when a month is shorter)');
    rule.day = day;
  }
  return rule;
}

export async function run(opts: RefillOptions, deps: Deps): Promise<number> {
  const path = `/_admin/v1/accounts/${encodeURIComponent(opts.account)}/refill`;
  if (opts.never) {
    if (opts.amount !== undefined || opts.every !== undefined || opts.day !== undefined) {
      throw new UsageError('give either AMOUNT --every … or --never, not both');
    }
    const account = await postMoney<AccountChange>(deps, path, undefined, opts.json, 'DELETE');
    if (account === null) return EXIT_OK;
    if (opts.json) deps.out.json(account);
    else deps.out.line(refillClearedLine(account));
    return EXIT_OK;
  }
  const changed = await postMoney<RefillChange>(deps, path, refillRule(opts), opts.json, 'PUT');
  if (changed === null) return EXIT_OK;
  if (opts.json) deps.out.json(changed);
  else for (const line of refillLines(changed)) deps.out.line(line);
  return EXIT_OK;
}

export const refillClearedLine = (account: AccountChange): string => `${account.name} is not refilled any more.`;

export function refillLines(c: RefillChange): string[] {
  const rule = c.refill!;
  const lines = [
    `${c.name} is refilled up to ${money(rule.amount)} every ${rule.every === 'day' ? 'day (UTC)' : `month on day ${rule.day ?? 1} (UTC)`}; next at ${rule.next_at}.`,
  ];
  const r = c.refilled;
  if (r !== null) {
    lines.push(
      r.amount === 0
        ? `This period (${r.period}): nothing moved, the balance was at ${money(r.target)} or more.`
        : `This period (${r.period}): refilled ${money(r.amount)} (transfer ${r.transfer_id}).`,
    );
  }
  lines.push(`Balance: ${money(c.balance)}`);
  return lines;
}
