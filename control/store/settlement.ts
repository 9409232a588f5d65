/**
 * Settlement batches: the SQL behind the settler (control/settler/). One batch is one
 * endpoint's oldest unsettled outcomes (at most the batch cap), committed in ONE IMMEDIATE
 * transaction: the batch row, a `settled_calls` row per call with its amounts, the calls'
 * entries deleted from the settler's queue (`unsettled_outcomes`), the ledger transfers and
 * balances, and the hourly refund tally. A crash before the commit leaves none of it; a batch
 * selects from the queue alone, so re-running it settles each call once (and `settled_calls`'
 * key refuses a call settled twice). Outcome rows themselves are never rewritten (migration 19
 * says why).
 * `settleGroup` commits several batches in one transaction (group commit): each batch is
 * still whole, and one commit instead of many saves an fsync per batch and, because the
 * endpoints' outcome rows share pages, most of the page writes.
 *
 * Ledger entries are aggregated per batch: at most three transfers, one premium transfer (a
 * posting per paying key → one on the pool), one treasury-fee transfer (pool → treasury) and
 * one refund transfer (pool → a posting per refunded key), `batchTransfers` in
 * `settlement-plan.ts`; each call's own premium, refund, refund owed and clamp are on its
 * `settled_calls` row, and `ledger verify` checks that the two agree per batch and key. Premiums
 * are booked before refunds, so the pool's running balance never dips below what the batch's
 * call-by-call arithmetic allowed. Batches settled before this shape have one premium and one
 * refund transfer per key; they verify the same way.
 *
 * Each batch's signed receipt (`receipts.ts`) is written in the same transaction, over the
 * leaves of its calls in settlement order with the amounts written for them (by the statements
 * of `sql/receipts.ts`, run here synchronously).
 *
 * What a plan implies apart from SQL (the standard amounts, the leaves, the transfers, the
 * group commit's decisions) is `settlement-plan.ts`, shared with PostgreSQL's
 * `pg/settlement.ts` and `pg/settlement-group.ts`.
 */
import type { Db } from './db';
import { COVERED_FAILURES } from '../../protocol/outcome';
import type { BatchView } from '../../protocol/settlement';
import type { LedgerTable } from './ledger';
import type { Receipt } from '../../protocol/receipts';
import { MissingReceiptError, type ReceiptsCore } from './receipts-core';
import { Q as RECEIPT_SQL } from './sql/receipts';
import { GroupRun, batchFigures, batchLeaves, batchTransfers, checkMarked, notPending, pendingOrder } from './settlement-plan';

export type { BatchPlan, CallAmounts, Economics, NextBatch, PlanInput, Planner, UnsettledCall } from './settlement-types';
import type { Economics, NextBatch, Planner, UnsettledCall } from './settlement-types';

export const HOUR_MS = 3_600_000;

/** The covered failures as an SQL list. */
export const COVERED = [...COVERED_FAILURES].map((o) => `'${o}'`).join(', ');
/**
 * `e(id)`: the distinct endpoints with unsettled outcomes, one seek each in the queue's key
 * instead of a scan of the backlog (in both dialects).
 */
export const PENDING_ENDPOINTS = `WITH RECURSIVE e(id) AS (
  SELECT (SELECT min(endpoint_id) FROM unsettled_outcomes)
  UNION ALL
  SELECT (SELECT min(endpoint_id) FROM unsettled_outcomes WHERE endpoint_id > e.id) FROM e WHERE e.id IS NOT NULL)`;

/** The columns of a `settled_calls` row, in the order the settlement's INSERTs give them. */
export const SETTLED_COLUMNS =
  'call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp';

/**
 * The standard amounts of a queued call (`q`) in SQL, from the batch's standard premium and
 * refund owed (the parameters named `premium` and `owed`, written by `param`): premium on an
 * `ok` call with a key, the refund owed paid in full on a covered failure with a key, nothing
 * else (`settlement-plan.ts` `standardAmounts` is the same rule for the leaves). One expression
 * per column: premium, refund, refund_owed, clamp.
 */
export function standardAmountColumns(param: (name: 'premium' | 'owed') => string): [string, string, string, string] {
  const owed = `CASE WHEN q.key_id IS NOT NULL AND q.outcome IN (${COVERED}) THEN ${param('owed')} ELSE 0 END`;
  return [`CASE WHEN q.key_id IS NOT NULL AND q.outcome = 'ok' THEN ${param('premium')} ELSE 0 END`, owed, owed, 'NULL'];
}

/** `standardAmountColumns` as one list of SQL expressions. */
export const standardAmountsSql = (param: (name: 'premium' | 'owed') => string): string => standardAmountColumns(param).join(', ');

export const ZERO_ECONOMICS: Economics = { price: 0, premium: 0, refund_cap_per_hour: 0, treasury_fee_bps: 0 };

/** A `settlement_batches` row: the view's fields, with the time in ms. */
export type BatchRow = Omit<BatchView, 'created_at'> & { created_at: number };

export const batchView = (row: BatchRow): BatchView => ({ ...row, created_at: new Date(row.created_at).toISOString() });

export class SettlementTable {
  private readonly ledger: LedgerTable;
  private readonly receipts: ReceiptsCore;
  private readonly pendingEndpointsStmt;
  private readonly headStmt;
  private readonly selectStmt;
  private readonly economicsStmt;
  private readonly hourStmt;
  private readonly addHourStmt;
  private readonly insertBatchStmt;
  private readonly exceptionStmt;
  private readonly standardStmt;
  private readonly dequeueOneStmt;
  private readonly dequeueStmt;
  private readonly backlogStmt;
  private readonly oldestStmt;
  private readonly lastBatchStmt;
  private readonly receiptHeadStmt;
  private readonly receiptGapStmt;
  private readonly receiptInsertStmt;
  private readonly batchTx;
  private readonly groupTx;

  constructor(db: Db, ledger: LedgerTable, receipts: ReceiptsCore) {
    this.ledger = ledger;
    this.receipts = receipts;
    this.receiptHeadStmt = db.prepare(RECEIPT_SQL.head.sqlite);
    this.receiptGapStmt = db.prepare(RECEIPT_SQL.gap.sqlite).pluck();
    this.receiptInsertStmt = db.prepare(RECEIPT_SQL.insert.sqlite);
    // Distinct endpoints with unsettled outcomes: one seek per endpoint in the queue's key.
    this.pendingEndpointsStmt = db
      .prepare(
        `${PENDING_ENDPOINTS}
         SELECT id FROM e WHERE id IS NOT NULL`,
      )
      .pluck();
    this.headStmt = db
      .prepare(`SELECT received_at FROM unsettled_outcomes WHERE endpoint_id = ? ORDER BY received_at, call_id LIMIT 1`)
      .pluck();
    this.selectStmt = db.prepare(
      `SELECT call_id, key_id, outcome, started_at, received_at FROM unsettled_outcomes
       WHERE endpoint_id = ? AND received_at <= ?
       ORDER BY received_at, call_id LIMIT ?`,
    );
    this.economicsStmt = db.prepare(`SELECT price, premium, refund_cap_per_hour, treasury_fee_bps FROM endpoints WHERE id = ?`);
    this.hourStmt = db.prepare(`SELECT refunds FROM refund_hours WHERE endpoint_id = ? AND hour = ?`).pluck();
    this.addHourStmt = db.prepare(
      `INSERT INTO refund_hours (endpoint_id, hour, refunds) VALUES (?, ?, ?)
       ON CONFLICT (endpoint_id, hour) DO UPDATE SET refunds = refunds + excluded.refunds`,
    );
    this.insertBatchStmt = db.prepare(
      `INSERT INTO settlement_batches (endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    );
    this.exceptionStmt = db.prepare(
      `INSERT INTO settled_calls (${SETTLED_COLUMNS})
       SELECT call_id, @batch, endpoint_id, key_id, outcome, started_at, received_at, @premium, @refund, @refund_owed, @clamp
       FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND received_at = @received_at AND call_id = @call_id`,
    );
    this.dequeueOneStmt = db.prepare(
      `DELETE FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND received_at = @received_at AND call_id = @call_id`,
    );
    // Everything else in the batch in one statement: the queue's rows up to the last selected
    // one in settlement order are exactly the selected ones less the exceptions, already
    // dequeued (the order is total; the transaction holds).
    this.standardStmt = db.prepare(
      `INSERT INTO settled_calls (${SETTLED_COLUMNS})
       SELECT q.call_id, @batch, q.endpoint_id, q.key_id, q.outcome, q.started_at, q.received_at, ${standardAmountsSql((p) => `@${p}`)}
       FROM unsettled_outcomes q WHERE q.endpoint_id = @endpoint AND (q.received_at, q.call_id) <= (@received_at, @call_id)`,
    );
    this.dequeueStmt = db.prepare(
      `DELETE FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND (received_at, call_id) <= (@received_at, @call_id)`,
    );
    this.backlogStmt = db.prepare(`SELECT count(*) FROM unsettled_outcomes`).pluck();
    // The oldest head among the endpoints: an index seek per endpoint, not a scan of the backlog.
    this.oldestStmt = db
      .prepare(
        `${PENDING_ENDPOINTS}
         SELECT min((SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                     ORDER BY q.received_at, q.call_id LIMIT 1))
         FROM e WHERE e.id IS NOT NULL`,
      )
      .pluck();
    this.lastBatchStmt = db.prepare(`SELECT * FROM settlement_batches ORDER BY id DESC LIMIT 1`);
    this.batchTx = db.transaction((endpointId: string, boundary: number, cap: number, at: number, plan: Planner) =>
      this.commit(endpointId, boundary, cap, at, plan),
    );
    this.groupTx = db.transaction((next: NextBatch, boundary: number, at: number, plan: Planner, budget: number) => {
      const run = new GroupRun(next, budget);
      for (let step = run.step(); step !== null; step = run.step()) {
        if (step === 'round') run.startRound(this.pendingEndpoints(boundary));
        else run.committed(this.commit(step.endpointId, boundary, step.cap, at, plan));
      }
      return run.made;
    });
  }

  /** Endpoints with outcomes received at or before `boundary` still unsettled, oldest head first. */
  pendingEndpoints(boundary: number): string[] {
    const ids = this.pendingEndpointsStmt.all() as string[];
    return pendingOrder(
      ids.map((id) => ({ id, head: this.headStmt.get(id) as number | undefined })),
      boundary,
    );
  }

  /**
   * Settle up to `cap` of `endpointId`'s oldest unsettled outcomes received at or before
   * `boundary`, as one batch in one IMMEDIATE transaction. Returns the batch, or null when
   * there was nothing to settle.
   */
  settleBatch(endpointId: string, boundary: number, cap: number, at: number, plan: Planner): BatchView | null {
    return this.batchTx.immediate(endpointId, boundary, cap, at, plan);
  }

  /**
   * Settle several batches in ONE IMMEDIATE transaction: one batch for each endpoint (and
   * cap) `next` names (null ends the group), until the batches hold at least `budgetCalls`
   * calls. Each batch is as `settleBatch` makes it; if any fails, none of the group commits.
   */
  settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): BatchView[] {
    return this.groupTx.immediate(next, boundary, at, plan, budgetCalls);
  }

  /**
   * Outcomes not settled yet, and when the oldest of them was received (ms, or null). The
   * count reads the queue (about 1 µs per pending outcome); the age is a seek per endpoint.
   */
  backlog(): { count: number; oldest_received_at: number | null } {
    return { count: this.backlogStmt.get() as number, oldest_received_at: (this.oldestStmt.get() as number | null) ?? null };
  }

  lastBatch(): BatchView | null {
    const row = this.lastBatchStmt.get() as BatchRow | undefined;
    return row === undefined ? null : batchView(row);
  }

  private commit(endpointId: string, boundary: number, cap: number, at: number, planner: Planner): BatchView | null {
    const calls = this.selectStmt.all(endpointId, boundary, cap) as UnsettledCall[];
    if (calls.length === 0) return null;
    const economics = (this.economicsStmt.get(endpointId) as Economics | undefined) ?? ZERO_ECONOMICS;
    const plan = planner({
      endpointId,
      calls,
      economics,
      pool: this.ledger.balance('pool'),
      refundedInHour: (hour) => (this.hourStmt.get(endpointId, hour) as number | undefined) ?? 0,
    });
    const f = batchFigures(calls.length, plan);
    const batch = this.insertBatchStmt.get(
      endpointId,
      at,
      f.calls,
      f.premiums,
      f.treasury_fees,
      f.refunds,
      f.refunds_owed,
      f.clamped_calls,
    ) as BatchRow;
    // The receipt's tree is computed (on the hasher's thread) while the rows are written.
    const tree = this.receipts.enabled
      ? this.receipts.startTree(batchLeaves(batch, this.receipts.provider(batch.endpoint_id), calls, plan, this.receipts))
      : null;

    if (plan.exceptions.size > 0) {
      const receivedAt = new Map(calls.map((c) => [c.call_id, c.received_at]));
      for (const [callId, a] of plan.exceptions) {
        const spot = { endpoint: endpointId, received_at: receivedAt.get(callId) ?? -1, call_id: callId };
        if (this.exceptionStmt.run({ batch: batch.id, ...a, ...spot }).changes !== 1) throw notPending(callId);
        this.dequeueOneStmt.run(spot);
      }
    }
    const last = calls[calls.length - 1]!;
    const range = { endpoint: endpointId, received_at: last.received_at, call_id: last.call_id };
    const standard = this.standardStmt.run({
      batch: batch.id,
      premium: plan.standard.premium,
      owed: plan.standard.owed,
      ...range,
    }).changes;
    checkMarked(calls.length, standard + plan.exceptions.size);
    checkMarked(calls.length - plan.exceptions.size, this.dequeueStmt.run(range).changes);

    // Premiums first, then the fee, then refunds: the pool only grows until the refunds.
    for (const transfer of batchTransfers(plan, batch.id, at)) this.ledger.transfer(transfer);
    for (const [hour, amount] of plan.refundsByHour) if (amount > 0) this.addHourStmt.run(endpointId, hour, amount);
    if (tree !== null) {
      // The receipt, chained to the newest one; never past a batch without its receipt.
      const head = this.receiptHeadStmt.get() as Receipt | undefined;
      const gap = this.receiptGapStmt.get(head?.batch ?? 0, batch.id - 1) as number | undefined;
      if (gap !== undefined) throw new MissingReceiptError(gap);
      const signed = this.receipts.sign(batch, tree.result(), calls.length, head);
      this.receiptInsertStmt.run({ ...signed.receipt, subtrees: signed.subtrees });
    }
    return batchView(batch);
  }
}
