/**
 * Answers of the indexer ({indexer_url}, docs/design.md §7): aggregate statistics and call activity.
 * Built by control (`control/indexer/`), read by `svcctl stats` and `svc-monitor-sdk`, and
 * described by the indexer's OpenAPI document. Amounts are integer micro-units from the
 * ledger (0 until the settler has settled something); ids are opaque (`call_…`, `prv_…`).
 */
import { z } from 'zod';
import { PublicPool } from './lps';
import { Outcome } from './outcome';
import { SettlerPublicState } from './public';
import { Clamp } from './settlement';
import { Count, IsoTime, MicroAmount, Millis } from './wire';

/** One call, as `/api/activity` and `recent_activity` list it. */
export const ActivityItem = z.strictObject({
  /** Opaque call id (`call_…`), stable for the call. */
  call_id: z.string(),
  /** Opaque provider id, as in `/api/v1/providers`. */
  provider: z.string(),
  outcome: Outcome,
  status: z.number().int().min(100).max(599),
  latency_ms: Millis,
  /** When the call started (gateway clock). */
  at: IsoTime,
  settled: z.boolean(),
  /** Settlement batch id, null until settled. */
  batch: z.number().int().min(1).nullable(),
  /** Premium collected and refund paid (micro-units); null until settled. */
  premium: MicroAmount.nullable(),
  refund: MicroAmount.nullable(),
  /** Why a refund was clamped, if it was. */
  clamp: Clamp.nullable(),
});
export type ActivityItem = z.infer<typeof ActivityItem>;

/** A settled call: what `recent_activity` holds (docs/design.md §7: the last N settled calls). */
export const SettledActivityItem = ActivityItem.extend({
  settled: z.literal(true),
  batch: z.number().int().min(1),
  premium: MicroAmount,
  refund: MicroAmount,
});
export type SettledActivityItem = z.infer<typeof SettledActivityItem>;

/** `GET {indexer_url}/api/stats`. */
export const StatsAnswer = z.strictObject({
  /** The coverage pool's balance: `pool.capital`. */
  pool_size: MicroAmount,
  /** Who may lose what: the capital, what its exposure locks, what is free, and its owners (protocol/lps.ts). */
  pool: PublicPool,
  settled_batches: Count,
  settled_calls: Count,
  total_refunds: MicroAmount,
  total_premiums: MicroAmount,
  /** Every call recorded by a gateway, settled or not. */
  total_calls: Count,
  /** Refunds owed before clamping (the pool or an endpoint's refund caps may have paid less). */
  total_refunds_owed: MicroAmount,
  /** Recorded calls not settled yet. */
  unsettled_calls: Count,
  /** Recorded calls admitted uncovered (`X-Svc-Coverage: none`, while the pool was paused): they move no money. */
  uncovered_calls: Count,
  amount_decimals: z.literal(6),
  settler: SettlerPublicState,
  last_batch_at: IsoTime.nullable(),
  /** The calls of the latest settlement batches, newest batch first; unsettled calls are only in `/api/activity`. */
  recent_activity: z.array(SettledActivityItem),
  updated_at: IsoTime,
});
export type StatsAnswer = z.infer<typeof StatsAnswer>;

/** Query of `GET {indexer_url}/api/activity`. */
/** Query of the `/activity` page: `before` as `/api/activity`, and the GET form's filter and lookup (an empty field is no filter). */
export const ActivityPageQuery = z.object({
  before: z.string().optional().describe('`next_before` of the previous page, or an ISO 8601 time: calls that started earlier'),
  provider: z.string().optional().describe('only the calls of this provider (its `prv_…` id); empty: every provider'),
  outcome: z.string().optional().describe('only the calls with this outcome (`ok`, `server_error`, …); empty: every outcome'),
  call: z
    .string()
    .max(200)
    .optional()
    .describe('a gateway call id (`X-Svc-Call-Id`) to look up: its outcome, refund, batch and a link to its proof'),
});

export const ActivityQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe('calls per page: default public.activityPageSize (50), at most public.activityMaxPageSize (200)'),
  before: z.string().optional().describe('`next_before` of the previous page, or an ISO 8601 time: calls that started earlier'),
});

/** `GET {indexer_url}/api/activity`: calls newest first, settled or not. */
export const ActivityPage = z.strictObject({
  activity: z.array(ActivityItem),
  limit: z.number().int().min(1),
  /** Pass as `before` for the next (older) page; null on the last page. */
  next_before: z.string().nullable(),
  updated_at: IsoTime,
});
export type ActivityPage = z.infer<typeof ActivityPage>;
