/**
 * Reads behind the public API and the indexer that the ledger module does not offer: the
 * secret that keys every public opaque id (created once, stable across restarts), and the
 * list of recorded calls, newest first, paged by a keyset cursor (started_at, call_id) over
 * the `outcome_records_by_time` index (migrations 4 and 19). Money totals come from `ledger.ts`.
 */
import { randomBytes } from 'node:crypto';
import { canonicalCallId, NIL_CALL_ID, type Outcome } from '../../protocol/outcome';
import type { Db } from './db';
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

/** The account reads' statements, the same text on both stores (`?` placeholders). */
/** Narrows `activity`: calls of one endpoint, of one outcome, or both. */
export interface ActivityFilter {
  endpointId: string | null;
  outcome: Outcome | null;
}

/** `activity` with a filter: a null filter field matches every row; paged by the same keyset. */
export const FILTERED_ACTIVITY_SQL = (columns: string): string =>
  `SELECT ${columns} FROM outcomes
   WHERE endpoint_id = coalesce(?, endpoint_id) AND outcome = coalesce(?, outcome) AND (started_at, call_id) < (?, ?)
   ORDER BY started_at DESC, call_id DESC LIMIT ?`;

/**
 * The last calls owed a refund, newest first, overall (`endpoint` false) or of one endpoint (its
 * id the first parameter): each reads one of `settled_calls`' partial indexes (calls owed a
 * refund) and the few outcome rows it lists. The columns are `ACTIVITY_COLUMNS`'.
 */
export const REFUNDS_SQL = (endpoint: boolean): string =>
  `SELECT s.call_id, s.endpoint_id, s.outcome, o.status, o.latency_ms, s.started_at, s.batch_id AS settled_batch, s.premium, s.refund, s.clamp
   FROM settled_calls s JOIN outcome_records o ON o.call_id = s.call_id
   WHERE ${endpoint ? 's.endpoint_id = ? AND ' : ''}s.refund_owed > 0 ORDER BY s.started_at DESC, s.call_id DESC LIMIT ?`;

/** The columns of an activity row, read from the `outcomes` view. */
export const ACTIVITY_COLUMNS = `call_id, endpoint_id, outcome, status, latency_ms, started_at, settled_batch, premium, refund, clamp`;

/** The keyset a first filtered page starts below: after every call. */
export const NEWEST: ActivityCursor = { started_at: Number.MAX_SAFE_INTEGER, call_id: NIL_CALL_ID };

export const ACCOUNT_SQL = {
  groups: (sum: (column: string) => string, settled: string) =>
    `SELECT o.outcome, ${settled} AS settled, count(*) AS calls, ${sum('o.refund')} AS refund, ${sum('o.premium')} AS premium,
            ${sum('e.price')} AS price, ${sum('e.premium')} AS endpoint_premium
     FROM outcomes o LEFT JOIN endpoints e ON e.id = o.endpoint_id
     WHERE o.key_id = ? AND o.started_at >= ? AND o.started_at < ?
     GROUP BY o.outcome, ${settled}`,
  lastCall: `SELECT max(started_at) AS at FROM outcome_records WHERE key_id = ?`,
  calls: (where: string) =>
    `SELECT o.call_id, o.endpoint_id, e.display_name, o.started_at, o.outcome, o.status, o.latency_ms, o.refund, o.premium, o.settled_batch
     FROM outcomes o LEFT JOIN endpoints e ON e.id = o.endpoint_id
     WHERE o.key_id = ? ${where} ORDER BY o.started_at DESC, o.call_id DESC LIMIT ?`,
};

export class PublicReads {
  /** HMAC key of the public opaque ids; created on first open, stable across restarts. */
  readonly idSecret: Buffer;
  private readonly firstPageStmt;
  private readonly pageStmt;
  private readonly filteredStmt;
  private readonly callStmt;
  private readonly refundsStmt;
  private readonly refundsOfStmt;
  private readonly batchesStmt;
  private readonly accountGroupsStmt;
  private readonly lastCallStmt;
  private readonly accountFirstStmt;
  private readonly accountPageStmt;

  constructor(db: Db) {
    db.prepare(`INSERT OR IGNORE INTO public_secret (id, secret) VALUES (1, ?)`).run(randomBytes(32));
    this.idSecret = db.prepare(`SELECT secret FROM public_secret WHERE id = 1`).pluck().get() as Buffer;
    const columns = ACTIVITY_COLUMNS;
    this.firstPageStmt = db.prepare(`SELECT ${columns} FROM outcomes ORDER BY started_at DESC, call_id DESC LIMIT ?`);
    this.pageStmt = db.prepare(
      `SELECT ${columns} FROM outcomes WHERE (started_at, call_id) < (?, ?) ORDER BY started_at DESC, call_id DESC LIMIT ?`,
    );
    this.filteredStmt = db.prepare(FILTERED_ACTIVITY_SQL(columns));
    this.callStmt = db.prepare(`SELECT ${columns} FROM outcomes WHERE call_id = ?`);
    this.refundsStmt = db.prepare(REFUNDS_SQL(false));
    this.refundsOfStmt = db.prepare(REFUNDS_SQL(true));
    this.batchesStmt = db.prepare(
      `SELECT id, endpoint_id, created_at, calls, premiums, refunds, refunds_owed, clamped_calls
       FROM settlement_batches ORDER BY id DESC LIMIT ?`,
    );
    // The account reads use outcome_records_by_key (migrations 18, 19): one key's calls by time.
    this.accountGroupsStmt = db.prepare(ACCOUNT_SQL.groups((c) => `coalesce(sum(${c}), 0)`, '(o.settled_batch IS NOT NULL)'));
    this.lastCallStmt = db.prepare(ACCOUNT_SQL.lastCall).pluck();
    this.accountFirstStmt = db.prepare(ACCOUNT_SQL.calls(''));
    this.accountPageStmt = db.prepare(ACCOUNT_SQL.calls('AND (o.started_at, o.call_id) < (?, ?)'));
  }

  /** The calls of key `keyId` that started in [from, to), grouped by outcome and settled or not. */
  accountGroups(keyId: string, from: number, to: number): AccountGroup[] {
    return this.accountGroupsStmt.all(keyId, from, to) as AccountGroup[];
  }

  /** When the latest call of key `keyId` started, or null when it made none. */
  lastCall(keyId: string): number | null {
    return (this.lastCallStmt.get(keyId) as number | null | undefined) ?? null;
  }

  /** Up to `limit` calls of key `keyId` older than `before` (or its newest), newest first. */
  accountCalls(keyId: string, limit: number, before: ActivityCursor | null): AccountCallRow[] {
    return (
      before === null ? this.accountFirstStmt.all(keyId, limit) : this.accountPageStmt.all(keyId, before.started_at, before.call_id, limit)
    ) as AccountCallRow[];
  }

  /**
   * The last `limit` settled calls that were owed a refund (paid, or clamped by the pool or an
   * hourly cap), newest call first; of one endpoint, or of all.
   */
  refunds(limit: number, endpointId: string | null = null): ActivityRow[] {
    return (endpointId === null ? this.refundsStmt.all(limit) : this.refundsOfStmt.all(endpointId, limit)) as ActivityRow[];
  }

  /** The last `limit` settlement batches, newest first. */
  batches(limit: number): BatchSummary[] {
    return this.batchesStmt.all(limit) as BatchSummary[];
  }

  /** Up to `limit` calls older than `before` (or the newest ones), newest first; only those `filter` names when given. */
  activity(limit: number, before: ActivityCursor | null, filter: ActivityFilter | null = null): ActivityRow[] {
    if (filter !== null) {
      const from = before ?? NEWEST;
      return this.filteredStmt.all(filter.endpointId, filter.outcome, from.started_at, from.call_id, limit) as ActivityRow[];
    }
    return (before === null ? this.firstPageStmt.all(limit) : this.pageStmt.all(before.started_at, before.call_id, limit)) as ActivityRow[];
  }

  /** The recorded call with the gateway's call id `callId` (its `X-Svc-Call-Id`), if any. */
  call(callId: string): ActivityRow | null {
    const id = canonicalCallId(callId);
    return id === null ? null : ((this.callStmt.get(id) as ActivityRow | undefined) ?? null);
  }
}
