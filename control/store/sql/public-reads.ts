/**
 * The public API's and the indexer's reads (`../public-reads.ts`), on either database, and the
 * secret behind the public ids, which each store reads once, when it opens.
 */
import { canonicalCallId, NIL_CALL_ID } from '../../../protocol/outcome';
import { sql, type Conn } from '../conn';
import type { AccountCallRow, AccountGroup, ActivityCursor, ActivityFilter, ActivityRow, BatchSummary, PublicReads } from '../public-reads';

/** The secret behind the public opaque ids: created by the first open, stable across restarts. */
export const ID_SECRET = {
  create: sql(`INSERT INTO public_secret (id, secret) VALUES (1, ?) ON CONFLICT DO NOTHING`),
  read: sql(`SELECT secret FROM public_secret WHERE id = 1`),
};

/** The columns of an activity row, read from the `outcomes` view. */
const COLUMNS = `call_id, endpoint_id, outcome, status, latency_ms, started_at, settled_batch, premium, refund, clamp`;
const NEWEST_FIRST = `ORDER BY started_at DESC, call_id DESC LIMIT ?`;

/** The keyset a first filtered page starts below: after every call. */
const NEWEST: ActivityCursor = { started_at: Number.MAX_SAFE_INTEGER, call_id: NIL_CALL_ID };

/**
 * The last calls owed a refund, newest first, overall (`endpoint` false) or of one endpoint (its
 * id the first parameter): each reads one of `settled_calls`' partial indexes (calls owed a
 * refund) and the few outcome rows it lists. The columns are `COLUMNS`'.
 */
export const REFUNDS_SQL = (endpoint: boolean): string =>
  `SELECT s.call_id, s.endpoint_id, s.outcome, o.status, o.latency_ms, s.started_at, s.batch_id AS settled_batch, s.premium, s.refund, s.clamp
   FROM settled_calls s JOIN outcome_records o ON o.call_id = s.call_id
   WHERE ${endpoint ? 's.endpoint_id = ? AND ' : ''}s.refund_owed > 0 ORDER BY s.started_at DESC, s.call_id DESC LIMIT ?`;

/** A key's calls, by time: over `outcome_records_by_key` (migrations 18, 19). */
const accountCalls = (where: string) =>
  sql(`SELECT o.call_id, o.endpoint_id, e.display_name, o.started_at, o.outcome, o.status, o.latency_ms, o.refund, o.premium, o.settled_batch
   FROM outcomes o LEFT JOIN endpoints e ON e.id = o.endpoint_id
   WHERE o.key_id = ? ${where} ORDER BY o.started_at DESC, o.call_id DESC LIMIT ?`);
const sum = (column: string) => `CAST(coalesce(sum(${column}), 0) AS BIGINT)`;
const SETTLED = `CASE WHEN o.settled_batch IS NULL THEN 0 ELSE 1 END`;

const Q = {
  firstPage: sql(`SELECT ${COLUMNS} FROM outcomes ${NEWEST_FIRST}`),
  page: sql(`SELECT ${COLUMNS} FROM outcomes WHERE (started_at, call_id) < (?, ?) ${NEWEST_FIRST}`),
  // A null filter field matches every row; paged by the same keyset.
  filtered: sql(
    `SELECT ${COLUMNS} FROM outcomes
     WHERE endpoint_id = coalesce(?, endpoint_id) AND outcome = coalesce(?, outcome) AND (started_at, call_id) < (?, ?) ${NEWEST_FIRST}`,
  ),
  call: sql(`SELECT ${COLUMNS} FROM outcomes WHERE call_id = ?`),
  refunds: sql(REFUNDS_SQL(false)),
  refundsOf: sql(REFUNDS_SQL(true)),
  batches: sql(
    `SELECT id, endpoint_id, created_at, calls, premiums, refunds, refunds_owed, clamped_calls FROM settlement_batches ORDER BY id DESC LIMIT ?`,
  ),
  accountGroups: sql(
    `SELECT o.outcome, ${SETTLED} AS settled, count(*) AS calls, ${sum('o.refund')} AS refund, ${sum('o.premium')} AS premium,
            ${sum('e.price')} AS price, ${sum('e.premium')} AS endpoint_premium
     FROM outcomes o LEFT JOIN endpoints e ON e.id = o.endpoint_id
     WHERE o.key_id = ? AND o.started_at >= ? AND o.started_at < ?
     GROUP BY o.outcome, ${SETTLED}`,
  ),
  lastCall: sql(`SELECT max(started_at) FROM outcome_records WHERE key_id = ?`),
  accountFirst: accountCalls(''),
  accountPage: accountCalls('AND (o.started_at, o.call_id) < (?, ?)'),
};

export class SqlPublicReads implements PublicReads {
  constructor(private readonly conn: Conn) {}

  accountGroups(keyId: string, from: number, to: number): Promise<AccountGroup[]> {
    return this.conn.all(Q.accountGroups, [keyId, from, to]);
  }

  async lastCall(keyId: string): Promise<number | null> {
    return (await this.conn.value<number | null>(Q.lastCall, [keyId])) ?? null;
  }

  accountCalls(keyId: string, limit: number, before: ActivityCursor | null): Promise<AccountCallRow[]> {
    return before === null
      ? this.conn.all(Q.accountFirst, [keyId, limit])
      : this.conn.all(Q.accountPage, [keyId, before.started_at, before.call_id, limit]);
  }

  refunds(limit: number, endpointId: string | null = null): Promise<ActivityRow[]> {
    return endpointId === null ? this.conn.all(Q.refunds, [limit]) : this.conn.all(Q.refundsOf, [endpointId, limit]);
  }

  batches(limit: number): Promise<BatchSummary[]> {
    return this.conn.all(Q.batches, [limit]);
  }

  activity(limit: number, before: ActivityCursor | null, filter: ActivityFilter | null = null): Promise<ActivityRow[]> {
    if (filter !== null) {
      const from = before ?? NEWEST;
      return this.conn.all(Q.filtered, [filter.endpointId, filter.outcome, from.started_at, from.call_id, limit]);
    }
    return before === null ? this.conn.all(Q.firstPage, [limit]) : this.conn.all(Q.page, [before.started_at, before.call_id, limit]);
  }

  async call(callId: string): Promise<ActivityRow | null> {
    const id = canonicalCallId(callId);
    return id === null ? null : ((await this.conn.get<ActivityRow>(Q.call, [id])) ?? null);
  }
}
