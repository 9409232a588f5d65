/**
 * Settlement batches on PostgreSQL: the same batches as SQLite's `../settlement.ts` (its header
 * says what one is), committed by the same plan logic (`../settlement-plan.ts`).
 *
 * - `settleBatch` and `settleGroup` each run in ONE transaction under the store's writer lock
 *   (`serial`, as SQLite's `BEGIN IMMEDIATE`), which first locks the pool account's balance row.
 *   Each batch's id is `max(id) + 1`, taken inside that transaction: receipts chain batches
 *   1, 2, 3 … without a gap, which a sequence cannot promise (the schema says why); the primary
 *   key refuses a second writer that numbered the same batch.
 * - A batch is a handful of statements whatever its size: its calls (from the settler's queue),
 *   the economics and the hourly refund tallies its calls' hours need (read before planning:
 *   the planner is synchronous), the batch row, the exceptions in one statement and the
 *   standard calls in another (each deletes its calls' queue entries and inserts their
 *   `settled_calls` rows from what it deleted), its transfers (at most three, with a posting
 *   per key) in one (`PgLedgerTable.transferAll`, which checks each first), the tallies, and
 *   the receipt (`PgReceiptsTable.append`), in that transaction.
 */
import type { BatchView } from '../../../protocol/settlement';
import type { Async } from '../seam';
import {
  HOUR_MS,
  PENDING_ENDPOINTS,
  SETTLED_COLUMNS,
  ZERO_ECONOMICS,
  batchView,
  standardAmountsSql,
  type BatchRow,
  type Economics,
  type NextBatch,
  type Planner,
  type SettlementTable,
  type UnsettledCall,
} from '../settlement';
import { GroupRun, batchFigures, batchLeaves, batchTransfers, checkMarked, notPending, pendingOrder } from '../settlement-plan';
import { sql, type PgConn } from './conn';
import { PgLedgerTable } from './ledger';
import type { PgReceiptsTable } from './receipts';

const Q = {
  // Each endpoint with unsettled outcomes and when its oldest one was received.
  heads: sql(
    `${PENDING_ENDPOINTS}
     SELECT e.id, (SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                   ORDER BY q.received_at, q.call_id LIMIT 1) AS head
     FROM e WHERE e.id IS NOT NULL`,
  ),
  lockPool: sql(`SELECT balance FROM account_balances WHERE account = 'pool' FOR UPDATE`),
  select: sql(
    `SELECT call_id, key_id, outcome, started_at, received_at FROM unsettled_outcomes
     WHERE endpoint_id = ? AND received_at <= ?
     ORDER BY received_at, call_id LIMIT ?`,
  ),
  economics: sql(`SELECT price, premium, refund_cap_per_hour, treasury_fee_bps FROM endpoints WHERE id = ?`),
  hours: sql(`SELECT hour, refunds FROM refund_hours WHERE endpoint_id = ? AND hour = ANY(?::bigint[])`),
  addHours: sql(
    `INSERT INTO refund_hours (endpoint_id, hour, refunds)
     SELECT ?, hour, refunds FROM unnest(?::bigint[], ?::bigint[]) AS h (hour, refunds)
     ON CONFLICT (endpoint_id, hour) DO UPDATE SET refunds = refund_hours.refunds + excluded.refunds`,
  ),
  // Numbered inside the transaction that locked the pool's row (see the header).
  insertBatch: sql(
    `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
     SELECT coalesce(max(id), 0) + 1, @endpoint_id::text, @created_at::bigint, @calls::bigint, @premiums::bigint,
            @treasury_fees::bigint, @refunds::bigint, @refunds_owed::bigint, @clamped_calls::bigint
     FROM settlement_batches
     RETURNING *`,
  ),
  exceptions: sql(
    `WITH q AS (
       DELETE FROM unsettled_outcomes q
       USING unnest(@call_id::text[], @received_at::bigint[], @premium::bigint[], @refund::bigint[], @refund_owed::bigint[], @clamp::text[])
         AS x (call_id, received_at, premium, refund, refund_owed, clamp)
       WHERE q.endpoint_id = @endpoint AND q.received_at = x.received_at AND q.call_id = x.call_id
       RETURNING q.*, x.premium, x.refund, x.refund_owed, x.clamp)
     INSERT INTO settled_calls (${SETTLED_COLUMNS})
     SELECT call_id, @batch::bigint, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp FROM q
     RETURNING call_id`,
  ),
  // Everything else in the batch in one statement: the queue's rows up to the last selected one
  // in settlement order are exactly the selected ones less the exceptions, already dequeued
  // (the order is total; the writer lock holds).
  standard: sql(
    `WITH q AS (
       DELETE FROM unsettled_outcomes
       WHERE endpoint_id = @endpoint AND (received_at, call_id) <= (@received_at::bigint, @call_id::text)
       RETURNING *)
     INSERT INTO settled_calls (${SETTLED_COLUMNS})
     SELECT q.call_id, @batch::bigint, q.endpoint_id, q.key_id, q.outcome, q.started_at, q.received_at,
       ${standardAmountsSql((p) => `@${p}::bigint`)}
     FROM q`,
  ),
  backlog: sql(`SELECT count(*) FROM unsettled_outcomes`),
  // The oldest head among the endpoints: an index seek per endpoint, not a scan of the backlog.
  oldest: sql(
    `${PENDING_ENDPOINTS}
     SELECT min((SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                 ORDER BY q.received_at, q.call_id LIMIT 1))
     FROM e WHERE e.id IS NOT NULL`,
  ),
  lastBatch: sql(`SELECT * FROM settlement_batches ORDER BY id DESC LIMIT 1`),
};

export class PgSettlementTable implements Async<SettlementTable> {
  constructor(
    private readonly conn: PgConn,
    private readonly ledger: PgLedgerTable,
    private readonly receipts: PgReceiptsTable,
  ) {}

  /** Endpoints with outcomes received at or before `boundary` still unsettled, oldest head first. */
  async pendingEndpoints(boundary: number): Promise<string[]> {
    return pendingOrder(await this.conn.all<{ id: string; head: number | null }>(Q.heads), boundary);
  }

  /**
   * Settle up to `cap` of `endpointId`'s oldest unsettled outcomes received at or before
   * `boundary`, as one batch in one transaction under the writer lock. Returns the batch, or
   * null when there was nothing to settle.
   */
  settleBatch(endpointId: string, boundary: number, cap: number, at: number, plan: Planner): Promise<BatchView | null> {
    return this.settling((tx) => tx.commit(endpointId, boundary, cap, at, plan));
  }

  /**
   * Settle several batches in ONE transaction under the writer lock, as `SettlementTable.settleGroup`
   * picks them (`GroupRun`); if any fails, none of the group commits.
   */
  settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): Promise<BatchView[]> {
    return this.settling(async (tx) => {
      const run = new GroupRun(next, budgetCalls);
      for (let step = run.step(); step !== null; step = run.step()) {
        if (step === 'round') run.startRound(await tx.pendingEndpoints(boundary));
        else run.committed(await tx.commit(step.endpointId, boundary, step.cap, at, plan));
      }
      return run.made;
    });
  }

  /** Outcomes not settled yet, and when the oldest of them was received (ms, or null). */
  async backlog(): Promise<{ count: number; oldest_received_at: number | null }> {
    const count = (await this.conn.value<number>(Q.backlog))!;
    return { count, oldest_received_at: (await this.conn.value<number | null>(Q.oldest)) ?? null };
  }

  async lastBatch(): Promise<BatchView | null> {
    const row = await this.conn.get<BatchRow>(Q.lastBatch);
    return row === undefined ? null : batchView(row);
  }

  /**
   * Run `fn` with this table on one serial transaction's connection (the ledger and receipts
   * with it), after locking the pool's balance row: batches are numbered one at a time.
   */
  private settling<T>(fn: (tx: PgSettlementTable) => Promise<T>): Promise<T> {
    return this.conn.tx(async (c) => {
      await c.get(Q.lockPool);
      const receipts = this.receipts.on(c);
      return fn(new PgSettlementTable(c, new PgLedgerTable(c), receipts));
    }, 'serial');
  }

  /** One batch (as SQLite's `commit`), on the transaction's connection. */
  private async commit(endpointId: string, boundary: number, cap: number, at: number, planner: Planner): Promise<BatchView | null> {
    const c = this.conn;
    const calls = await c.all<UnsettledCall>(Q.select, [endpointId, boundary, cap]);
    if (calls.length === 0) return null;
    const economics = (await c.get<Economics>(Q.economics, [endpointId])) ?? ZERO_ECONOMICS;
    const refunded = await this.refundedInHours(endpointId, calls);
    const plan = planner({
      endpointId,
      calls,
      economics,
      pool: await this.ledger.balance('pool'),
      refundedInHour: (hour) => {
        const refunds = refunded.get(hour);
        if (refunds === undefined) throw new Error(`settlement: hour ${hour} is not the hour of a call of the batch`);
        return refunds;
      },
    });
    const batch = (await c.get<BatchRow>(Q.insertBatch, { endpoint_id: endpointId, created_at: at, ...batchFigures(calls.length, plan) }))!;
    // The receipt's tree is computed (on the hasher's thread) while the rows are written.
    const core = this.receipts.core;
    const tree = this.receipts.enabled ? core.startTree(batchLeaves(batch, core.provider(batch.endpoint_id), calls, plan, core)) : null;

    if (plan.exceptions.size > 0) {
      const receivedAt = new Map(calls.map((call) => [call.call_id, call.received_at]));
      const x = {
        call_id: [] as string[],
        received_at: [] as number[],
        premium: [] as number[],
        refund: [] as number[],
        refund_owed: [] as number[],
        clamp: [] as (string | null)[],
      };
      for (const [callId, a] of plan.exceptions) {
        x.call_id.push(callId);
        x.received_at.push(receivedAt.get(callId) ?? -1);
        x.premium.push(a.premium);
        x.refund.push(a.refund);
        x.refund_owed.push(a.refund_owed);
        x.clamp.push(a.clamp);
      }
      const marked = new Set(await c.column<string>(Q.exceptions, { batch: batch.id, endpoint: endpointId, ...x }));
      const missed = x.call_id.find((callId) => !marked.has(callId));
      if (missed !== undefined) throw notPending(missed);
    }
    const last = calls[calls.length - 1]!;
    const standard = await c.run(Q.standard, {
      batch: batch.id,
      premium: plan.standard.premium,
      owed: plan.standard.owed,
      endpoint: endpointId,
      received_at: last.received_at,
      call_id: last.call_id,
    });
    checkMarked(calls.length, standard + plan.exceptions.size);

    // Premiums first, then the fee, then refunds: the pool only grows until the refunds.
    await this.ledger.transferAll(batchTransfers(plan, batch.id, at));
    const hours = [...plan.refundsByHour].filter(([, amount]) => amount > 0);
    if (hours.length > 0) {
      await c.run(Q.addHours, [endpointId, hours.map(([hour]) => hour), hours.map(([, amount]) => amount)]);
    }
    if (tree !== null) await this.receipts.append(batch, tree, calls.length);
    return batchView(batch);
  }

  /** What the endpoint has refunded in each clock hour its calls started in (0 for an hour without refunds). */
  private async refundedInHours(endpointId: string, calls: readonly UnsettledCall[]): Promise<Map<number, number>> {
    const refunded = new Map<number, number>();
    for (const call of calls) refunded.set(Math.floor(call.started_at / HOUR_MS), 0);
    const rows = await this.conn.all<{ hour: number; refunds: number }>(Q.hours, [endpointId, [...refunded.keys()]]);
    for (const row of rows) refunded.set(row.hour, row.refunds);
    return refunded;
  }
}
