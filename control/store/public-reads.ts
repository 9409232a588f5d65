/**
 * Reads behind the public API and the indexer that the ledger module does not offer: the
 * secret that keys every public opaque id (created once, stable across restarts), and the
 * list of recorded calls, newest first, paged by a keyset cursor (started_at, call_id) over
 * the `outcomes_by_time` index of migration 4. Money totals come from `ledger.ts`.
 */
import { randomBytes } from 'node:crypto';
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

export class PublicReads {
  /** HMAC key of the public opaque ids; created on first open, stable across restarts. */
  readonly idSecret: Buffer;
  private readonly firstPageStmt;
  private readonly pageStmt;
  private readonly refundsStmt;
  private readonly refundsOfStmt;
  private readonly batchesStmt;

  constructor(db: Db) {
    db.prepare(`INSERT OR IGNORE INTO public_secret (id, secret) VALUES (1, ?)`).run(randomBytes(32));
    this.idSecret = db.prepare(`SELECT secret FROM public_secret WHERE id = 1`).pluck().get() as Buffer;
    const columns = `call_id, endpoint_id, outcome, status, latency_ms, started_at, settled_batch, premium, refund, clamp`;
    this.firstPageStmt = db.prepare(`SELECT ${columns} FROM outcomes ORDER BY started_at DESC, call_id DESC LIMIT ?`);
    this.pageStmt = db.prepare(
      `SELECT ${columns} FROM outcomes WHERE (started_at, call_id) < (?, ?) ORDER BY started_at DESC, call_id DESC LIMIT ?`,
    );
    // Both read the partial indexes of migration 11 (calls owed a refund), newest first.
    this.refundsStmt = db.prepare(`SELECT ${columns} FROM outcomes WHERE refund_owed > 0 ORDER BY started_at DESC, call_id DESC LIMIT ?`);
    this.refundsOfStmt = db.prepare(
      `SELECT ${columns} FROM outcomes WHERE endpoint_id = ? AND refund_owed > 0 ORDER BY started_at DESC, call_id DESC LIMIT ?`,
    );
    this.batchesStmt = db.prepare(
      `SELECT id, endpoint_id, created_at, calls, premiums, refunds, refunds_owed, clamped_calls
       FROM settlement_batches ORDER BY id DESC LIMIT ?`,
    );
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

  /** Up to `limit` calls older than `before` (or the newest ones), newest first. */
  activity(limit: number, before: ActivityCursor | null): ActivityRow[] {
    return (before === null ? this.firstPageStmt.all(limit) : this.pageStmt.all(before.started_at, before.call_id, limit)) as ActivityRow[];
  }
}
