/**
 * PostgreSQL's group commit of settlement batches (`SettlementTable.settleGroup`; the rest of
 * the family is `../sql/settlement.ts`): ONE transaction under the store's writer lock
 * (`serial`), which first locks the pool account's balance row and numbers the first batch
 * `max(id) + 1`; how each batch is read and planned while the one before it is written is
 * `settlement-group.ts` (`SettlementGroup`, one per transaction).
 */
import type { BatchView } from '../../../protocol/settlement';
import type { NextBatch, Planner, SettlementTable } from '../settlement';
import { GroupRun } from '../settlement-plan';
import { PLANNING } from '../sql/settlement';
import { sql, type PgConn } from './conn';
import type { PgReceiptsTable } from './receipts';
import { SettlementGroup } from './settlement-group';
import type { QueuePosition } from './settlement-sql';

const Q = {
  lockPool: sql(`SELECT balance FROM account_balances WHERE account = 'pool' FOR UPDATE`),
  nextId: sql(`SELECT coalesce(max(id), 0) + 1 FROM settlement_batches`),
};

export class PgSettlementGroups implements Pick<SettlementTable, 'settleGroup'> {
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
    private readonly receipts: PgReceiptsTable,
    /** A connection of its own that reads batches ahead (`PgShared.settlementReader`). */
    private readonly reader: PgConn,
  ) {}

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
}
