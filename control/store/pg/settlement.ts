/**
 * Settlement batches on PostgreSQL: the same batches as SQLite's `../settlement.ts` (its header
 * says what one is), committed by the same plan logic (`../settlement-plan.ts`).
 *
 * - `settleBatch` and `settleGroup` each run in ONE transaction under the store's writer lock
 *   (`serial`, as SQLite's `BEGIN IMMEDIATE`), which first locks the pool account's balance row.
 *   Batch ids are `max(id) + 1` onwards, read inside that transaction: receipts chain batches
 *   1, 2, 3 … without a gap, which a sequence cannot promise (the schema says why); the primary
 *   key refuses a second writer that numbered the same batch.
 * - A batch, and how each batch is read and planned while the one before it is written, is
 *   `settlement-group.ts` (`SettlementGroup`, one per transaction).
 */
import type { BatchView } from '../../../protocol/settlement';
import type { Async } from '../seam';
import { batchView, type BatchRow, type NextBatch, type Planner, type SettlementTable } from '../settlement';
import { GroupRun } from '../settlement-plan';
import { sql, type PgConn } from './conn';
import type { ReceiptsTable } from '../receipts';
import { SettlementGroup } from './settlement-group';
import { PG_PENDING_ENDPOINTS, PLANNING, pendingOrderOf, type QueuePosition } from './settlement-sql';

const Q = {
  lockPool: sql(`SELECT balance FROM account_balances WHERE account = 'pool' FOR UPDATE`),
  nextId: sql(`SELECT coalesce(max(id), 0) + 1 FROM settlement_batches`),
  // The backlog is read outside the settler's transactions (status, metrics), so planned at
  // each execution (`SqlOptions.replan`) rather than under `SETTLER_PLANNING`.
  backlog: sql(`SELECT count(*) FROM unsettled_outcomes`, { replan: true }),
  // The oldest head among the endpoints: an index seek per endpoint, not a scan of the backlog.
  oldest: sql(
    `${PG_PENDING_ENDPOINTS}
     SELECT min((SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                 ORDER BY q.received_at, q.call_id LIMIT 1))
     FROM e WHERE e.id IS NOT NULL`,
    { replan: true },
  ),
  lastBatch: sql(`SELECT * FROM settlement_batches ORDER BY id DESC LIMIT 1`),
};

export class PgSettlementTable implements Async<SettlementTable> {
  /**
   * Where the settler's current run stands (a run passes the same `next` to each of its
   * groups): each endpoint's last call settled by its groups committed so far. The run's next
   * group reads and walks the queue past them rather than over the entries they deleted (still
   * in the index until a vacuum). A call before one of them that is still queued was ingested
   * after its batch was read: the next run starts from the first entry again and settles it.
   */
  private run: { next: NextBatch; settledTo: ReadonlyMap<string, QueuePosition> } | null = null;

  constructor(
    private readonly conn: PgConn,
    private readonly receipts: ReceiptsTable,
    /** A connection of its own that reads batches ahead (`PgShared.settlementReader`). */
    private readonly reader: PgConn,
  ) {}

  /** Endpoints with outcomes received at or before `boundary` still unsettled, oldest head first. */
  pendingEndpoints(boundary: number): Promise<string[]> {
    return this.conn.tx(async (c) => {
      await c.run(PLANNING);
      return pendingOrderOf(c, boundary);
    });
  }

  /**
   * Settle up to `cap` of `endpointId`'s oldest unsettled outcomes received at or before
   * `boundary`, as one batch in one transaction under the writer lock. Returns the batch, or
   * null when there was nothing to settle.
   */
  async settleBatch(endpointId: string, boundary: number, cap: number, at: number, plan: Planner): Promise<BatchView | null> {
    let asked = false;
    const once: NextBatch = {
      next: () => (asked ? null : ((asked = true), { endpointId, cap })),
      startRound: () => undefined,
    };
    const [batch] = await this.settleGroup(once, boundary, at, plan, cap);
    return batch ?? null;
  }

  /**
   * Settle several batches in ONE transaction under the writer lock (which first locks the
   * pool's balance row), as `SettlementTable.settleGroup` picks them (`GroupRun`); if any fails,
   * none of the group commits.
   */
  async settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): Promise<BatchView[]> {
    const settledTo = new Map(this.run?.next === next ? this.run.settledTo : []);
    const made = await this.conn.tx(async (c) => {
      await c.run(PLANNING);
      const pool = (await c.value<number>(Q.lockPool)) ?? 0;
      const nextId = (await c.value<number>(Q.nextId))!;
      const group = new SettlementGroup(c, this.reader, this.receipts.on(c), pool, nextId, boundary, at, plan, settledTo);
      return group.run(new GroupRun(next, budgetCalls));
    }, 'serial');
    this.run = { next, settledTo }; // committed
    return made;
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
}
