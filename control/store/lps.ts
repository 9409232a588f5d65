/**
 * The liquidity providers table family (migration 23), as callers see it: who owns the pool's
 * capital, in shares; the share events that change a position, each tied to the ledger
 * transfer that moved the money; the withdrawal queue; and the pool's exposure and locked
 * capital. Its rules apart from SQL (the share arithmetic and its rounding, exposure) are here,
 * pure, so `ledger verify` recomputes them with the same functions. Its one implementation is
 * `sql/lps.ts`.
 *
 * Rounding (integers throughout, products in BigInt; it never creates money, the pool keeps
 * the remainders):
 *
 * - a deposit of `amount` into a pool of capital C with S shares outstanding mints
 *   floor(amount × S ÷ C) shares (`amount` shares while none are outstanding: a share is first
 *   worth one micro-unit);
 * - a position of `h` shares is worth floor(h × C ÷ S);
 * - a payment of `p` to a provider burns ceil(p × S ÷ C) shares, or all of its shares when
 *   `p` is its whole value.
 *
 * Two edge cases are settled before a deposit mints: while shares are outstanding and the pool
 * holds nothing, those shares are worth nothing and are written off (`write_off`); while the
 * pool holds capital no one has shares of (premiums earned with no provider), that capital is
 * the operator's (`unowned`, at one micro-unit a share).
 */
import { CodedError, InvariantError } from '../../protocol/coded-error';
import type { LpView, PoolCapitalView, ShareEventView, WithdrawalView } from '../../protocol/lps';

export type ShareEventKind = ShareEventView['kind'];

/** A provider as stored. */
export interface LpRow {
  id: string;
  name: string;
  shares: number;
  created_at: number;
  created_by: string;
}

/** A withdrawal request as stored. */
export interface WithdrawalRow {
  id: number;
  provider_id: string;
  provider: string;
  amount: number | null;
  paid: number;
  status: WithdrawalView['status'];
  requested_at: number;
  requested_by: string;
  due_at: number;
  closed_at: number | null;
  closed_by: string | null;
}

/** A share event as stored. */
export interface ShareEventRow {
  id: number;
  provider_id: string;
  kind: ShareEventKind;
  shares: number;
  amount: number;
  capital_before: number;
  shares_before: number;
  before_transfer: number;
  transfer_id: number | null;
  withdrawal_id: number | null;
  exposure: number | null;
  locked: number | null;
  at: number;
}

/** A rule a provider request would break; the admin API answers 409 `svc_conflict` with `reason` (and `field`). */
export class LpError extends CodedError {
  override readonly code = 'SVC_ERR_LP';
  constructor(
    readonly reason: 'name_taken' | 'reference_used' | 'over_position' | 'not_pending' | 'mints_nothing',
    readonly field: string | null,
    message: string,
  ) {
    super(message);
  }
}

/** The pool's figures at one moment; `PoolCapitalView` without the settings. */
export interface PoolCapital {
  capital: number;
  shares: number;
  exposure: number;
  locked: number;
  providers: number;
  pending_withdrawals: number;
}

/** How the pool's capital is bound: `pool.lockRatio`, `pool.withdrawalNoticeH`. */
export interface CapitalRules {
  lockRatio: number;
  noticeH: number;
}

/** What one payment of a due withdrawal did. */
export interface WithdrawalPayment {
  withdrawal: WithdrawalRow;
  amount: number;
  shares: number;
  transfer_id: number;
  exposure: number;
  locked: number;
}

/** A deposit into a provider's position, as `LpsTable.deposit` answers it. */
export interface LpDeposit {
  transfer_id: number;
  provider_id: string;
  amount: number;
  reference: string | null;
  shares: number;
  created: boolean;
}

/** One endpoint's part of the exposure: its economics and its unsettled covered failures. */
export interface ExposureRow {
  endpoint_id: string;
  price: number;
  premium: number;
  refund_cap_per_call: number;
  refund_cap_per_hour: number;
  /** Unsettled covered failures that started before the current hour. */
  before: number;
  /** Those that started in the current hour. */
  current: number;
  /** Refunds paid for calls that started in the current hour. */
  refunded_this_hour: number;
  /** Whether the endpoint is removed (it takes no new calls). */
  removed: boolean;
}

const big = BigInt;

/** Shares minted for a deposit of `amount` into capital `capital` with `shares` outstanding (see the module). */
export function mintShares(amount: number, capital: number, shares: number): number {
  if (shares === 0) return amount;
  if (capital <= 0) throw new InvariantError(`minting into a pool of ${capital} with ${shares} shares outstanding`);
  return Number((big(amount) * big(shares)) / big(capital));
}

/** What `held` shares are worth: floor(held × capital ÷ shares). */
export function valueOf(held: number, capital: number, shares: number): number {
  if (shares === 0 || capital <= 0) return 0;
  return Number((big(held) * big(capital)) / big(shares));
}

/** Shares burned to pay `amount` to a provider holding `held` (all of them when it is their whole value). */
export function burnShares(amount: number, held: number, capital: number, shares: number): number {
  if (amount >= valueOf(held, capital, shares)) return held;
  const num = big(amount) * big(shares);
  const c = big(capital);
  return Number((num + c - 1n) / c);
}

/** The pool's exposure (see `PoolCapitalView`) from each endpoint's figures. */
export function exposureOf(rows: readonly ExposureRow[]): number {
  let total = 0;
  for (const r of rows) {
    const owed = r.price + r.premium;
    const perCall = r.refund_cap_per_call > 0 ? Math.min(owed, r.refund_cap_per_call) : owed;
    total += r.before * perCall;
    // This hour's calls, recorded or still under way, are refunded at most what is left of the
    // hourly cap; without one, only the recorded ones are known.
    if (r.refund_cap_per_hour > 0 && !r.removed) total += Math.max(0, r.refund_cap_per_hour - r.refunded_this_hour);
    else total += r.current * perCall;
  }
  return total;
}

/** Locked capital: min(capital, exposure × ratio), rounded up, and never below 0. */
export function lockedOf(capital: number, exposure: number, lockRatio: number): number {
  return Math.max(0, Math.min(capital, Math.ceil(exposure * lockRatio)));
}

/** The pool's capital as the admin API and `/api/stats` show it. */
export function capitalView(c: PoolCapital, rules: CapitalRules): PoolCapitalView {
  return {
    capital: c.capital,
    exposure: c.exposure,
    locked: c.locked,
    free: c.capital - c.locked,
    shares: c.shares,
    value_per_share: c.shares === 0 ? 1 : Math.round((c.capital / c.shares) * 1e9) / 1e9,
    providers: c.providers,
    pending_withdrawals: c.pending_withdrawals,
    lock_ratio: rules.lockRatio,
    notice_h: rules.noticeH,
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function withdrawalView(row: WithdrawalRow): WithdrawalView {
  return {
    id: row.id,
    provider_id: row.provider_id,
    provider: row.provider,
    amount: row.amount,
    paid: row.paid,
    status: row.status,
    requested_at: iso(row.requested_at),
    requested_by: row.requested_by,
    due_at: iso(row.due_at),
    closed_at: row.closed_at === null ? null : iso(row.closed_at),
    closed_by: row.closed_by,
  };
}

export function shareEventView(row: ShareEventRow): ShareEventView {
  return {
    id: row.id,
    kind: row.kind,
    shares: row.shares,
    amount: row.amount,
    capital_before: row.capital_before,
    shares_before: row.shares_before,
    transfer_id: row.transfer_id,
    withdrawal_id: row.withdrawal_id,
    at: iso(row.at),
  };
}

/** A provider's totals as stored: what it put in and took out. */
export interface LpTotals {
  deposited: number;
  withdrawn: number;
}

/**
 * A provider's position at capital `capital` with `shares` outstanding; `pending` is what its
 * pending withdrawals still ask for (a whole-position request counts the whole value).
 */
export function lpView(row: LpRow, totals: LpTotals, pending: readonly WithdrawalRow[], capital: number, shares: number): LpView {
  const value = valueOf(row.shares, capital, shares);
  let asked = 0;
  for (const w of pending) asked = w.amount === null ? value : Math.min(value, asked + w.amount - w.paid);
  return {
    id: row.id,
    name: row.name,
    shares: row.shares,
    value,
    deposited: totals.deposited,
    withdrawn: totals.withdrawn,
    gain: value + totals.withdrawn - totals.deposited,
    pending: asked,
    created_at: iso(row.created_at),
    created_by: row.created_by,
  };
}

/** One UTC day of the pool's history: its capital at the last sample, the highest exposure seen, and the capital locked then. */
export interface PoolDay {
  day: string;
  capital: number;
  exposure: number;
  locked: number;
}

/** The providers family, as `Store.lps` and every transaction's tables have it. */
export interface LpsTable {
  /** Add a provider (id `lp_…`). Throws `LpError('name_taken')`. Inside `Store.mutate`. */
  add(name: string, at: number, actor: string): Promise<LpRow>;
  /** A provider by id or name. */
  get(ref: string): Promise<LpRow | undefined>;
  /** Every provider, by name. */
  list(): Promise<LpRow[]>;
  /** What each provider put in and took out, by id. */
  totals(): Promise<Map<string, LpTotals>>;
  /** The pool's capital, exposure and locked capital, read in one snapshot. */
  capital(lockRatio: number, now: number): Promise<PoolCapital>;
  /**
   * Deposit `amount` into provider `providerId`'s position: external → pool (`lp_deposit`, or
   * `fund` for `pool fund`, whose `reference` is its note and not unique), minting shares. A
   * reference used before with the same provider and amount answers that deposit
   * (`created: false`); with another, `LpError('reference_used')`. Inside `Store.mutate`.
   */
  deposit(
    providerId: string,
    amount: number,
    kind: 'lp_deposit' | 'fund',
    reference: string | null,
    at: number,
    actor: string,
  ): Promise<LpDeposit>;
  /**
   * Queue a withdrawal of `amount` (null: the whole position), due `noticeMs` from `at`. Throws
   * `LpError('over_position')` when it asks for more than the position's value less what its
   * pending withdrawals ask. Inside `Store.mutate`.
   */
  requestWithdrawal(providerId: string, amount: number | null, at: number, noticeMs: number, actor: string): Promise<WithdrawalRow>;
  /** Cancel a pending withdrawal (what was paid of it stays paid). `LpError('not_pending')` otherwise. */
  cancelWithdrawal(id: number, at: number, actor: string): Promise<WithdrawalRow>;
  /** A withdrawal by id. */
  withdrawal(id: number): Promise<WithdrawalRow | undefined>;
  /** Withdrawals, oldest first (at most 1000): pending ones only, and/or one provider's. */
  withdrawals(opts: { pending?: boolean; providerId?: string }): Promise<WithdrawalRow[]>;
  /** A provider's share events, newest first (at most `limit`). */
  events(providerId: string, limit: number): Promise<ShareEventRow[]>;
  /**
   * Pay the withdrawals due at `now`, oldest due first, from free capital (capital less locked
   * at `lockRatio`), each in part when free capital is short (the rest waits; later ones wait
   * behind it). Each payment is an `lp_withdrawal` transfer and a share event. Inside
   * `Store.mutate` (the writer lock, so no settlement or deposit moves the pool meanwhile).
   */
  payDue(now: number, lockRatio: number, actor: string): Promise<WithdrawalPayment[]>;
  /** Record a sample of the pool in its day's row (`day` as `2026-11-29`): the capital now, the exposure if it is the day's highest. */
  sampleDay(day: string, capital: PoolCapital, at: number): Promise<void>;
  /** The days from `fromDay` on, oldest first. */
  days(fromDay: string): Promise<PoolDay[]>;
}
