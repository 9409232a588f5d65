/**
 * The indexer's answers (docs/design.md §7): aggregate statistics and recent activity. The numbers
 * and the recent (settled) calls come from the ledger module (`store.ledger`: pool balance, settlement
 * batches, each outcome's premium and refund), so money is 0 until the settler has settled
 * something, never estimated; `/api/activity` pages through `store.publicReads`. Amounts are
 * integer micro-units (6 decimals). Ids are opaque.
 */
import type { ActivityPage, StatsAnswer } from '../../protocol/indexer';
import type { ControlContext } from '../context';
import type { CursorCodec } from '../activity-cursor';
import type { OpaqueIds } from '../../protocol/opaque-ids';
import { activityItem } from '../activity-item';
import { publicPool } from '../pool';
import type { ActivityCursor, ActivityFilter } from '../store/public-reads';

export async function statsAnswer(ctx: ControlContext, ids: OpaqueIds): Promise<StatsAnswer> {
  const [totals, pool] = await Promise.all([ctx.store.ledger.totals(), publicPool(ctx)]);
  return {
    // One figure, read once: the pool's balance is its capital.
    pool_size: pool.capital,
    pool,
    settled_batches: totals.settled_batches,
    settled_calls: totals.settled_calls,
    total_refunds: totals.total_refunds,
    total_premiums: totals.total_premiums,
    total_calls: totals.total_calls,
    total_refunds_owed: totals.total_refunds_owed,
    unsettled_calls: totals.unsettled_calls,
    uncovered_calls: totals.uncovered_calls,
    amount_decimals: 6,
    settler: (await ctx.settler())?.state ?? 'not_running',
    last_batch_at: (await ctx.store.settlement.lastBatch())?.created_at ?? null,
    recent_activity: (await ctx.store.ledger.recentActivity(ctx.config.public.recentActivity)).map((row) => activityItem(ids, row)),
    updated_at: new Date(ctx.now()).toISOString(),
  };
}

export async function activityPage(
  ctx: ControlContext,
  ids: OpaqueIds,
  cursors: CursorCodec,
  limit: number,
  before: ActivityCursor | null,
  filter: ActivityFilter | null = null,
): Promise<ActivityPage> {
  // One extra row says whether an older page exists.
  const rows = await ctx.store.publicReads.activity(limit + 1, before, filter);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    activity: page.map((r) => activityItem(ids, r)),
    limit,
    next_before: rows.length > limit && last ? cursors.seal({ started_at: last.started_at, call_id: last.call_id }) : null,
    updated_at: new Date(ctx.now()).toISOString(),
  };
}
