/** Human rendering of accounts, shared by the accounts commands. */
import type { AccountView } from '../../../protocol/accounts';
import { money } from '../../money';
import { table } from '../../output';

const refillText = (a: AccountView): string =>
  a.refill === null
    ? 'never'
    : `up to ${money(a.refill.amount)} every ${a.refill.every}${a.refill.every === 'month' ? ` on day ${a.refill.day ?? 1}` : ''}`;

export function accountLines(a: AccountView): string[] {
  return [
    `id:          ${a.id}`,
    `name:        ${a.name}`,
    `balance:     ${money(a.balance)}`,
    `low below:   ${a.low === null ? '-' : money(a.low)}`,
    `refill:      ${refillText(a)}`,
    ...(a.refill === null ? [] : [`next refill: ${a.refill.next_at} (set by ${a.refill.set_by})`]),
    `wallet:      ${a.wallet ?? '-'}`,
    `keys:        ${a.keys}`,
    `created:     ${a.created_at} by ${a.created_by}`,
  ];
}

export function accountsTable(accounts: readonly AccountView[]): string {
  return table(
    ['NAME', 'ID', 'BALANCE', 'KEYS', 'LOW BELOW', 'REFILL', 'WALLET'],
    accounts.map((a) => [a.name, a.id, money(a.balance), a.keys, a.low === null ? null : money(a.low), refillText(a), a.wallet]),
  );
}
