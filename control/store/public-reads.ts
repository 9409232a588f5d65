/**
 * Reads behind the public API and the indexer that the ledger module does not offer: recorded
 * calls newest first, paged by a keyset cursor (started_at, call_id) over the
 * `outcome_records_by_time` index (migrations 4 and 19); a key's calls; the calls owed a
 * refund; the latest settlement batches (`sql/public-reads.ts`). Money totals come from
 * `ledger.ts`. The secret behind the public ids is the store's (`Store.idSecret`).
 */
import type { Outcome } from '../../protocol/outcome';
import type { ActivityRow as LedgerActivityRow } from './ledger';

/** One recorded call, as the indexer may show it (before the ids are made opaque). */
export type ActivityRow = Omit<LedgerActivityRow, 'refund_owed'>;

/** A settlement batch as the public pages show it (before the endpoint id is made opaque). */
export interface BatchSummary {
  id: number;
  endpoint_id: string;
  created_at: number;
  calls: number;
  premiums: number;
  refunds: number;
  refunds_owed: number;
  clamped_calls: number;
}

/** Position in the activity list: the call just before the wanted page, newest-first order. */
export interface ActivityCursor {
  started_at: number;
  call_id: string;
}

/**
 * A key's calls that started in a window, one group per outcome and settled or not: how many,
 * the refunds and premiums settled on them, and the price and premium their endpoints carry
 * now (what settling the unsettled ones would move, an estimate).
 */
export interface AccountGroup {
  outcome: Outcome;
  /** 1 for calls settled, 0 for calls awaiting settlement. */
  settled: number;
  calls: number;
  refund: number;
  premium: number;
  price: number;
  endpoint_premium: number;
}

/** One call of a key, as `/api/v1/account/calls` lists it (before the endpoint id is made opaque). */
export interface AccountCallRow {
  call_id: string;
  endpoint_id: string;
  display_name: string | null;
  started_at: number;
  outcome: Outcome;
  status: number;
  latency_ms: number;
  refund: number | null;
  premium: number | null;
  settled_batch: number | null;
}

/** Narrows `activity`: calls of one endpoint, of one outcome, or both. */
export interface ActivityFilter {
  endpointId: string | null;
  outcome: Outcome | null;
}

export interface PublicReads {
  /** The calls of key `keyId` that started in [from, to), grouped by outcome and settled or not. */
  accountGroups(keyId: string, from: number, to: number): Promise<AccountGroup[]>;
  /** When the latest call of key `keyId` started, or null when it made none. */
  lastCall(keyId: string): Promise<number | null>;
  /** Up to `limit` calls of key `keyId` older than `before` (or its newest), newest first. */
  accountCalls(keyId: string, limit: number, before: ActivityCursor | null): Promise<AccountCallRow[]>;
  /**
   * The last `limit` settled calls that were owed a refund (paid, or clamped by the pool or an
   * hourly cap), newest call first; of one endpoint, or of all.
   */
  refunds(limit: number, endpointId?: string | null): Promise<ActivityRow[]>;
  /** The last `limit` settlement batches, newest first. */
  batches(limit: number): Promise<BatchSummary[]>;
  /** Up to `limit` calls older than `before` (or the newest ones), newest first; only those `filter` names when given. */
  activity(limit: number, before: ActivityCursor | null, filter?: ActivityFilter | null): Promise<ActivityRow[]>;
  /** The recorded call with the gateway's call id `callId` (its `X-Svc-Call-Id`), if any. */
  call(callId: string): Promise<ActivityRow | null>;
}
