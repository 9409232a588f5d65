/**
 * The coverage pool's capital and who owns it (`/_admin/v1/lps`, `/_admin/v1/lp-withdrawals`,
 * docs/money.md "Pool capital"). Liquidity providers own the pool's capital in shares: a
 * deposit mints shares at the value a share has then, premiums (after the treasury fee) raise
 * that value and refunds lower it, and a paid withdrawal burns shares at the value then. The
 * built-in provider `operator` holds what `svcctl pool fund` puts in. Amounts are integer
 * micro-units; shares are integers. Shared by control (validates requests) and `svcctl` (sends
 * them, reads answers); field names are stable: `--json` output is built from these views.
 */
import { z } from 'zod';
import { DepositReference } from './accounts';
import { Count, IsoTime, MicroAmount } from './wire';

/** The built-in provider whose position `pool fund` deposits into (its id and its name). */
export const OPERATOR_LP = 'operator';

export const LP_NAME_RULE = '1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, not lp_';
export const LpName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: `must be ${LP_NAME_RULE}` })
  .refine((name) => !name.startsWith('lp_'), { message: `must be ${LP_NAME_RULE}` });

/** A provider as a request names it: its id (`lp_…`, or `operator`) or its name. */
export const LpRef = z.string().min(1).max(68);

/** Body of `POST /_admin/v1/lps`. */
export const CreateLpRequest = z.strictObject({ name: LpName });
export type CreateLpRequest = z.infer<typeof CreateLpRequest>;

/**
 * The pool's capital, what it may owe and what of it may leave, read at one moment:
 *
 * - `capital`: the ledger balance of `pool`;
 * - `exposure`: the most the pool could owe for covered calls recorded and not settled yet
 *   (each failed keyed call's price + premium, at most its endpoint's per-call cap), plus what
 *   is left of each endpoint's hourly refund cap in the current hour (calls not recorded yet);
 * - `locked`: min(capital, exposure × `pool.lockRatio`): what no withdrawal may take;
 * - `free`: capital − locked.
 */
export const PoolCapitalView = z.strictObject({
  capital: z.number().int(),
  exposure: MicroAmount,
  locked: MicroAmount,
  free: z.number().int(),
  /** Shares outstanding. */
  shares: MicroAmount,
  /** capital ÷ shares (1 before the first share was minted); rounded for display, the exact figures are `capital` and `shares`. */
  value_per_share: z.number().min(0),
  /** Providers holding shares. */
  providers: Count,
  /** Withdrawals requested and not paid or cancelled yet. */
  pending_withdrawals: Count,
  lock_ratio: z.number().min(0),
  /** Hours a withdrawal waits before it may be paid (`pool.withdrawalNoticeH`). */
  notice_h: z.number().min(0),
});
export type PoolCapitalView = z.infer<typeof PoolCapitalView>;

/**
 * The pool's capital as the public sees it (`/api/stats` `pool`, `/api/v1/status`, the status and
 * activity pages): the figures, and providers as a count, never a name.
 */
export const PublicPool = PoolCapitalView.pick({
  capital: true,
  locked: true,
  free: true,
  exposure: true,
  value_per_share: true,
  providers: true,
  pending_withdrawals: true,
}).extend({
  /**
   * Calls are admitted uncovered (premium 0, refund 0, `X-Svc-Coverage: none`): an operator
   * paused coverage, or the free capital is below `pool.minFree`.
   */
  paused: z.boolean(),
});
export type PublicPool = z.infer<typeof PublicPool>;

/**
 * Whether the pool covers new calls (docs/money.md, "Pause"), as control evaluates it every
 * second for the gateways: paused by an operator (`manual`, `svcctl pool pause`) or by itself
 * (`automatic`: the free capital below `min_free`, `pool.minFree` or by default the largest single
 * covered call). Paused, calls are admitted uncovered.
 */
export const PoolCoverage = z.strictObject({
  paused: z.boolean(),
  manual: z.boolean(),
  automatic: z.boolean(),
  free: MicroAmount,
  min_free: MicroAmount,
  /** The largest single covered call (price + premium, at most the per-call cap): gateways are given free capital in whole calls of it. */
  largest_call: MicroAmount,
});
export type PoolCoverage = z.infer<typeof PoolCoverage>;

/** A provider's position. `value` = shares × capital ÷ shares outstanding, rounded down. */
export const LpView = z.strictObject({
  id: z.string(),
  name: z.string(),
  shares: MicroAmount,
  value: MicroAmount,
  /** Money it put in (deposits; the operator's opening position counts as one). */
  deposited: MicroAmount,
  /** Money paid out to it by withdrawals. */
  withdrawn: MicroAmount,
  /** value + withdrawn − deposited: its share of premiums less refunds so far. */
  gain: z.number().int(),
  /** What its pending withdrawals still ask for (a whole-position request counts its value). */
  pending: MicroAmount,
  created_at: IsoTime,
  created_by: z.string(),
});
export type LpView = z.infer<typeof LpView>;

/** Answer of `GET /_admin/v1/lps`: every provider, by name, and the pool's capital. */
export const LpList = z.strictObject({ providers: z.array(LpView), pool: PoolCapitalView });
export type LpList = z.infer<typeof LpList>;

export const WITHDRAWAL_STATUSES = ['pending', 'paid', 'cancelled'] as const;

/** A withdrawal request and what was paid of it so far. */
export const WithdrawalView = z.strictObject({
  id: z.number().int().min(1),
  provider_id: z.string(),
  provider: z.string(),
  /** What was asked for; null: the whole position (its value when each payment is made). */
  amount: MicroAmount.nullable(),
  paid: MicroAmount,
  status: z.enum(WITHDRAWAL_STATUSES),
  requested_at: IsoTime,
  requested_by: z.string(),
  /** When its notice ends: it is paid from then on, oldest due first, from free capital. */
  due_at: IsoTime,
  closed_at: IsoTime.nullable(),
  closed_by: z.string().nullable(),
});
export type WithdrawalView = z.infer<typeof WithdrawalView>;

/** One change of a provider's shares, with the figures its rounding used. */
export const ShareEventView = z.strictObject({
  id: z.number().int().min(1),
  kind: z.enum(['migration', 'deposit', 'withdrawal', 'unowned', 'write_off']),
  /** Minted (+) or burned (−). */
  shares: z.number().int(),
  amount: MicroAmount,
  capital_before: z.number().int(),
  shares_before: MicroAmount,
  transfer_id: z.number().int().min(1).nullable(),
  withdrawal_id: z.number().int().min(1).nullable(),
  at: IsoTime,
});
export type ShareEventView = z.infer<typeof ShareEventView>;

/** Answer of `GET /_admin/v1/lps/{id}`: the position, its withdrawals and its share events, newest first (at most 100 each). */
export const LpDetail = LpView.extend({ withdrawals: z.array(WithdrawalView), events: z.array(ShareEventView) });
export type LpDetail = z.infer<typeof LpDetail>;

/** Body of `POST /_admin/v1/lps/{id}/deposit`: integer micro-units ≥ 1, and the reference that makes it one deposit. */
export const LpDepositRequest = z.strictObject({
  amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  reference: DepositReference,
});
export type LpDepositRequest = z.infer<typeof LpDepositRequest>;

/**
 * What a provider's deposit answers: `201` and `created: true` when it moved the money
 * (external → pool, an `lp_deposit` transfer) and minted `shares`; `200`, the first deposit's
 * figures and `created: false` for its reference again with the same provider and amount.
 */
export const LpDepositView = z.strictObject({
  transfer_id: z.number().int().min(1),
  provider_id: z.string(),
  amount: z.number().int().min(1),
  reference: z.string(),
  shares: MicroAmount,
  created: z.boolean(),
  position: LpView,
});
export type LpDepositView = z.infer<typeof LpDepositView>;

export const WITHDRAW_FIELDS = {
  /** What to withdraw, integer micro-units ≥ 1. */
  amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  /** The whole position, its value when each payment is made. */
  all: z.literal(true).optional(),
};
export const oneOfAmountOrAll = (r: { amount?: number | undefined; all?: true | undefined }, ctx: z.RefinementCtx): void => {
  if ((r.amount === undefined) === (r.all === undefined))
    ctx.addIssue({ code: 'custom', path: ['amount'], message: 'give either amount or all: true' });
};

/** Body of `POST /_admin/v1/lps/{id}/withdrawals`: an amount, or `all: true` for the whole position. */
export const WithdrawRequest = z.strictObject(WITHDRAW_FIELDS).superRefine(oneOfAmountOrAll);
export type WithdrawRequest = z.infer<typeof WithdrawRequest>;

/** Query of `GET /_admin/v1/lp-withdrawals`. */
export const WithdrawalListQuery = z.strictObject({
  pending: z.enum(['true', 'false']).optional().describe('`true`: only withdrawals not paid or cancelled yet'),
  provider: LpRef.optional().describe("one provider's (id or name)"),
});
export type WithdrawalListQuery = z.infer<typeof WithdrawalListQuery>;

/** Answer of `GET /_admin/v1/lp-withdrawals`: oldest first (at most 1000). */
export const WithdrawalList = z.strictObject({ withdrawals: z.array(WithdrawalView), pool: PoolCapitalView });
export type WithdrawalList = z.infer<typeof WithdrawalList>;
