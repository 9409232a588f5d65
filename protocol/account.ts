/**
 * The agent's own account on the public API ({api_url}, docs/design.md §7), read with its beta
 * key (`Authorization: Bearer svc_beta_…`): what it called, what was refunded and what it paid
 * over a window, and its calls page by page. Built by control (`control/public/account.ts`), read
 * by `svc-monitor-sdk` (`account()`, `calls()`). Amounts are integer micro-units like every
 * other amount of the public API and the indexer; provider ids are opaque, call ids are the
 * gateway's `X-Svc-Call-Id` (the caller's own handle, the one `/api/calls/<call_id>/proof` takes).
 */
import { z } from 'zod';
import { KeyStatus } from './admin';
import { OUTCOMES, Outcome } from './outcome';
import { Count, IsoTime, MicroAmount, Millis } from './wire';

/** The windows an account read may cover, and their length in milliseconds. */
export const ACCOUNT_WINDOWS = { '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;
export const AccountWindowName = z.enum(['24h', '7d', '30d']);
export type AccountWindowName = z.infer<typeof AccountWindowName>;
export const DEFAULT_ACCOUNT_WINDOW: AccountWindowName = '24h';

/** The most calls one page of `/api/v1/account/calls` holds (without `limit`: `public.activityPageSize`, as `/api/activity`). */
export const ACCOUNT_CALLS_MAX_LIMIT = 1_000;

/** Query of `GET {api_url}/api/v1/account`. */
export const AccountQuery = z.object({
  window: AccountWindowName.optional().describe('the window the counts and sums cover, ending now: 24h (default), 7d or 30d'),
});

/** The rate limit the gateways apply to the key now (before any division between gateways). */
export const AccountLimits = z.strictObject({
  count: z.number().int().min(1),
  window_seconds: z.number().int().min(1),
  burst: z.number().int().min(1),
  /** Where the policy comes from: a temporary lift, the key's own limit, or the default limit. */
  source: z.enum(['lift', 'key', 'default']),
  /** When a lift ends; null otherwise. */
  until: IsoTime.nullable(),
});
export type AccountLimits = z.infer<typeof AccountLimits>;

/** One count per outcome, every outcome present (0 when none). */
export const OutcomeCounts = z.strictObject(Object.fromEntries(OUTCOMES.map((o) => [o, Count])) as Record<Outcome, typeof Count>);
export type OutcomeCounts = z.infer<typeof OutcomeCounts>;

const PENDING =
  'an ESTIMATE, not ledger money: the price and premium the endpoints carry now, summed over the calls in the window not settled yet; settlement may pay less (the pool or the refund caps) or use other prices';

/** The balance of the account a key belongs to, as `/api/v1/account` shows it. */
export const AccountBalance = z.strictObject({
  /** The account (`acc_…`): several keys may share it, and its balance. */
  account_id: z.string(),
  /** What the account holds and has not set aside for calls in flight: deposits and refills and refunds in, premiums out. Negative while it owes premiums of postpaid calls. */
  available: z.number().int(),
  /** Set aside for calls admitted and not settled yet. */
  reserved: MicroAmount,
  /** True while `available` is under the account's low-balance threshold (false when it has none). */
  low: z.boolean(),
});
export type AccountBalance = z.infer<typeof AccountBalance>;

/** `GET {api_url}/api/v1/account`: the key's account over a window ending now. */
export const AccountAnswer = z.strictObject({
  key_id: z.string(),
  name: z.string().nullable(),
  status: KeyStatus,
  limits: AccountLimits,
  window: z.strictObject({ from: IsoTime, to: IsoTime }),
  /** Calls started in the window, every outcome counted. */
  calls: Count,
  outcomes: OutcomeCounts,
  refunds: z.strictObject({
    /** Refunds paid on the window's settled calls, after clamps (ledger money). */
    settled: MicroAmount.describe('refunds paid on the settled calls of the window, after clamps (ledger money)'),
    /** Price + premium of the window's unsettled covered failures: an estimate. */
    pending: MicroAmount.describe(
      `price + premium of the covered failures (latency_breach, server_error, network_error, schema_mismatch): ${PENDING}`,
    ),
  }),
  premiums: z.strictObject({
    /** Premiums collected on the window's settled calls (ledger money). */
    settled: MicroAmount.describe('premiums collected on the settled calls of the window (ledger money)'),
    /** Premium of the window's unsettled `ok` calls: an estimate. */
    pending: MicroAmount.describe(`premium of the ok calls: ${PENDING}`),
  }),
  /** Calls of the window not settled yet. */
  unsettled_calls: Count,
  /** When the key's latest call started (any time, not only in the window); null before its first. */
  last_call_at: IsoTime.nullable(),
  /** The money of the account the key belongs to (shared by its keys), now, in integer micro-units. */
  balance: AccountBalance,
});
export type AccountAnswer = z.infer<typeof AccountAnswer>;

/** One call of the key, as `/api/v1/account/calls` lists it. */
export const AccountCall = z.strictObject({
  /** The gateway's `X-Svc-Call-Id`: what `verifyRefund` and `/api/calls/<call_id>/proof` take. */
  call_id: z.string(),
  /** Opaque provider id, as in `/api/v1/providers`. */
  provider: z.string(),
  /** The provider's public name, or null. */
  display_name: z.string().nullable(),
  started_at: IsoTime,
  outcome: Outcome,
  status: z.number().int().min(100).max(599),
  latency_ms: Millis,
  /** Refund paid and premium collected (micro-units); null until settled. */
  refund: MicroAmount.nullable(),
  premium: MicroAmount.nullable(),
  /** Settlement batch, null until settled. */
  settled_batch: z.number().int().min(1).nullable(),
});
export type AccountCall = z.infer<typeof AccountCall>;

/** Query of `GET {api_url}/api/v1/account/calls`. */
export const AccountCallsQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(ACCOUNT_CALLS_MAX_LIMIT)
    .optional()
    .describe(`calls per page: default public.activityPageSize (50), at most ${ACCOUNT_CALLS_MAX_LIMIT}`),
  before: z.string().optional().describe('`next_before` of the previous page, or an ISO 8601 time: calls that started earlier'),
});

/** `GET {api_url}/api/v1/account/calls`: the key's calls newest first, settled or not. */
export const AccountCallsPage = z.strictObject({
  calls: z.array(AccountCall),
  /** Pass as `before` for the next (older) page; null on the last page. */
  next_before: z.string().nullable(),
});
export type AccountCallsPage = z.infer<typeof AccountCallsPage>;
