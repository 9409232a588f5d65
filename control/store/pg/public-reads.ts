/**
 * Reads behind the public API and the indexer on PostgreSQL (`../public-reads.ts` is the SQLite
 * twin): recorded calls newest first, paged by the keyset (started_at, call_id) over
 * `outcome_records_by_time`; the calls owed a refund over `settled_calls`' partial indexes; the latest settlement
 * batches. The secret behind the public ids is the store's (`store.ts` creates it at open).
 */
import {
  ACCOUNT_SQL,
  ACTIVITY_COLUMNS as COLUMNS,
  FILTERED_ACTIVITY_SQL,
  NEWEST,
  REFUNDS_SQL,
  type ActivityFilter,
  type AccountCallRow,
  type AccountGroup,
  type ActivityCursor,
  type ActivityRow,
  type BatchSummary,
  type PublicReads,
} from '../public-reads';
import type { Async } from '../seam';
import { canonicalCallId } from '../../../protocol/outcome';
import { sql, type PgConn } from './conn';

const Q = {
  firstPage: sql(`SELECT ${COLUMNS} FROM outcomes ORDER BY started_at DESC, call_id DESC LIMIT ?`),
  page: sql(`SELECT ${COLUMNS} FROM outcomes WHERE (started_at, call_id) < (?, ?) ORDER BY started_at DESC, call_id DESC LIMIT ?`),
  filtered: sql(FILTERED_ACTIVITY_SQL(COLUMNS)),
  call: sql(`SELECT ${COLUMNS} FROM outcomes WHERE call_id = ?`),
  refunds: sql(REFUNDS_SQL(false)),
  refundsOf: sql(REFUNDS_SQL(true)),
  batches: sql(
    `SELECT id, endpoint_id, created_at, calls, premiums, refunds, refunds_owed, clamped_calls
     FROM settlement_batches ORDER BY id DESC LIMIT ?`,
  ),
  accountGroups: sql(ACCOUNT_SQL.groups((c) => `coalesce(sum(${c}), 0)::bigint`, '(o.settled_batch IS NOT NULL)::int')),
  lastCall: sql(ACCOUNT_SQL.lastCall),
  accountFirst: sql(ACCOUNT_SQL.calls('')),
  accountPage: sql(ACCOUNT_SQL.calls('AND (o.started_at, o.call_id) < (?, ?)')),
};

export class PgPublicReads implements Async<PublicReads> {
  constructor(private readonly conn: PgConn) {}

  /**
   * The last `limit` settled calls that were owed a refund (paid, or clamped by the pool or an
   * hourly cap), newest call first; of one endpoint, or of all.
   */
  refunds(limit: number, endpointId: string | null = null): Promise<ActivityRow[]> {
    return endpointId === null ? this.conn.all(Q.refunds, [limit]) : this.conn.all(Q.refundsOf, [endpointId, limit]);
  }

  /** The last `limit` settlement batches, newest first. */
  batches(limit: number): Promise<BatchSummary[]> {
    return this.conn.all(Q.batches, [limit]);
  }

  /** The calls of key `keyId` that started in [from, to), grouped by outcome and settled or not. */
  accountGroups(keyId: string, from: number, to: number): Promise<AccountGroup[]> {
    return this.conn.all(Q.accountGroups, [keyId, from, to]);
  }

  /** When the latest call of key `keyId` started, or null when it made none. */
  async lastCall(keyId: string): Promise<number | null> {
    return (await this.conn.get<{ at: number | null }>(Q.lastCall, [keyId]))?.at ?? null;
  }

  /** Up to `limit` calls of key `keyId` older than `before` (or its newest), newest first. */
  accountCalls(keyId: string, limit: number, before: ActivityCursor | null): Promise<AccountCallRow[]> {
    return before === null
      ? this.conn.all(Q.accountFirst, [keyId, limit])
      : this.conn.all(Q.accountPage, [keyId, before.started_at, before.call_id, limit]);
  }

  /** Up to `limit` calls older than `before` (or the newest ones), newest first; only those `filter` names when given. */
  activity(limit: number, before: ActivityCursor | null, filter: ActivityFilter | null = null): Promise<ActivityRow[]> {
    if (filter !== null) {
      const from = before ?? NEWEST;
      return this.conn.all(Q.filtered, [filter.endpointId, filter.outcome, from.started_at, from.call_id, limit]);
    }
    return before === null ? this.conn.all(Q.firstPage, [limit]) : this.conn.all(Q.page, [before.started_at, before.call_id, limit]);
  }

  /** The recorded call with the gateway's call id `callId` (its `X-Svc-Call-Id`), if any. */
  async call(callId: string): Promise<ActivityRow | null> {
    const id = canonicalCallId(callId);
    return id === null ? null : ((await this.conn.get<ActivityRow>(Q.call, [id])) ?? null);
  }
}
