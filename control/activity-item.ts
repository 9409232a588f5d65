/**
 * A call as the public sees it (`ActivityItem`): opaque ids, the outcome, and its settlement
 * once settled. Shared by the indexer's answers and pages and the public site's provider page.
 */
import type { ActivityItem, SettledActivityItem } from '../protocol/indexer';
import type { OpaqueIds } from '../protocol/opaque-ids';
import type { SettledActivityRow } from './store/ledger';
import type { ActivityRow } from './store/public-reads';

/** A call from an activity page, a list of refunds or the recent settled calls, with opaque ids. */
export function activityItem(ids: OpaqueIds, row: SettledActivityRow): SettledActivityItem;
export function activityItem(ids: OpaqueIds, row: ActivityRow): ActivityItem;
export function activityItem(ids: OpaqueIds, row: ActivityRow): ActivityItem {
  return {
    call_id: ids.call(row.call_id),
    provider: ids.provider(row.endpoint_id),
    outcome: row.outcome,
    status: row.status,
    latency_ms: row.latency_ms,
    at: new Date(row.started_at).toISOString(),
    settled: row.settled_batch !== null,
    batch: row.settled_batch,
    premium: row.premium,
    refund: row.refund,
    clamp: row.clamp,
  };
}
