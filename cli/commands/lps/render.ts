/** Human rendering of liquidity providers, withdrawals and the pool's capital, shared by the lps and pool commands. */
import type { LpDepositView, LpView, PoolCapitalView, WithdrawalView } from '../../../protocol/lps';
import { formatUnits, money } from '../../money';
import { table } from '../../output';

/** `label:` padded so the values of a block line up, as `pool show`'s do. */
export const field = (label: string, value: string): string => `${`${label}:`.padEnd(17)}${value}`;

export function lpLines(p: LpView): string[] {
  return [
    field('id', p.id),
    field('name', p.name),
    field('shares', String(p.shares)),
    field('value', money(p.value)),
    field('deposited', money(p.deposited)),
    field('withdrawn', money(p.withdrawn)),
    field('gain', money(p.gain)),
    field('pending', money(p.pending)),
    field('created', `${p.created_at} by ${p.created_by}`),
  ];
}

/** The providers' positions, in units. */
export function lpsTable(providers: readonly LpView[]): string {
  return table(
    ['NAME', 'ID', 'SHARES', 'VALUE', 'DEPOSITED', 'WITHDRAWN', 'GAIN', 'PENDING'],
    providers.map((p) => [
      p.name,
      p.id,
      p.shares,
      formatUnits(p.value),
      formatUnits(p.deposited),
      formatUnits(p.withdrawn),
      formatUnits(p.gain),
      formatUnits(p.pending),
    ]),
  );
}

/** The pool's capital in one line, under a list of providers or withdrawals. */
export const poolCapitalLine = (c: PoolCapitalView): string =>
  `Pool: capital ${formatUnits(c.capital)}, exposure ${formatUnits(c.exposure)}, locked ${formatUnits(c.locked)}, free ${formatUnits(c.free)}; value/share ${c.value_per_share}; ${c.pending_withdrawals} pending withdrawal(s).`;

/** The pool's capital as `pool show` prints it, one figure a line. */
export function capitalLines(c: PoolCapitalView): string[] {
  return [
    field('capital', money(c.capital)),
    field('exposure', money(c.exposure)),
    field('locked', money(c.locked)),
    field('free', money(c.free)),
    field('shares', String(c.shares)),
    field('value per share', String(c.value_per_share)),
    field('providers', String(c.providers)),
    field('withdrawals', `${c.pending_withdrawals} pending`),
    field('lock ratio', String(c.lock_ratio)),
    field('notice', `${c.notice_h} h`),
  ];
}

/** What a withdrawal asks for: an amount, or the whole position. */
const asked = (w: WithdrawalView): string => (w.amount === null ? 'all' : formatUnits(w.amount));

export function withdrawalsTable(withdrawals: readonly WithdrawalView[]): string {
  return table(
    ['ID', 'PROVIDER', 'STATUS', 'AMOUNT', 'PAID', 'REQUESTED', 'DUE', 'CLOSED'],
    withdrawals.map((w) => [w.id, w.provider, w.status, asked(w), formatUnits(w.paid), w.requested_at, w.due_at, w.closed_at]),
  );
}

export function withdrawalLines(w: WithdrawalView): string[] {
  return [
    field('id', String(w.id)),
    field('provider', `${w.provider} (${w.provider_id})`),
    field('amount', w.amount === null ? 'the whole position' : money(w.amount)),
    field('paid', money(w.paid)),
    field('status', w.status),
    field('requested', `${w.requested_at} by ${w.requested_by}`),
    field('due', w.due_at),
    ...(w.closed_at === null ? [] : [field('closed', `${w.closed_at}${w.closed_by === null ? '' : ` by ${w.closed_by}`}`)]),
  ];
}

/** What `lps deposit` prints (and `approvals approve` for an `lps.deposit`). */
export const lpDepositLines = (d: LpDepositView): string[] => [
  d.created
    ? `Deposited ${money(d.amount)} into ${d.position.name}'s position (transfer ${d.transfer_id}, reference ${d.reference}): ${d.shares} shares minted.`
    : `Reference ${d.reference} was deposited before (transfer ${d.transfer_id}, ${money(d.amount)}): nothing moved.`,
  ...lpLines(d.position),
];

/** What `lps add` prints (and `approvals approve` for an `lps.add`). */
export const lpAddedLines = (p: LpView): string[] => [
  `Added liquidity provider ${p.name} (${p.id}). Deposit into its position with: svcctl lps deposit ${p.name} AMOUNT --reference REF`,
  ...lpLines(p),
];

/** What `lps withdraw` prints (and `approvals approve` for an `lps.withdraw`). */
export const withdrawnLines = (w: WithdrawalView): string[] => [
  `Withdrawal ${w.id} requested for ${w.provider}: ${w.amount === null ? 'the whole position' : money(w.amount)}, paid from free capital from ${w.due_at}.`,
  ...withdrawalLines(w),
];

/** What `lps cancel` prints (and `approvals approve` for an `lps.cancel`). */
export const cancelledLines = (w: WithdrawalView): string[] => [
  `Cancelled withdrawal ${w.id} of ${w.provider}${w.paid > 0 ? `; ${money(w.paid)} paid of it stays paid` : ''}.`,
  ...withdrawalLines(w),
];
