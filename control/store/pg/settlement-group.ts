/**
 * PostgreSQL's group commit of settlement batches: `PgSettlementGroups` opens the transaction,
 * locks the pool's row and numbers the first batch; `SettlementGroup` is its batches.
 *
 * - A batch is three statements whatever its size. Its reads: its endpoint's economics, and its
 *   calls from the settler's queue, each with the refunds its clock hour already paid. Its
 *   writes, all in ONE statement (`Q.write`): the batch row; its calls' queue entries deleted
 *   and their `settled_calls` rows inserted from what was deleted, with the plan's amounts for
 *   its exceptions and the standard ones for the rest; its transfers and their postings (at
 *   most three, with a posting per account: `TRANSFER_CTES`, each checked first by
 *   `checkTransfer`); the hourly tallies; and its receipt.
 * - Balances move once per group, not per batch: at its end, each account the group's
 *   postings touched by their sum (`Q.balances`). A key in every batch of a group of twenty
 *   has its row updated once instead of twice a batch. The pool's lowest point, which its
 *   CHECK (balance ≥ 0) would have tested batch by batch, is checked here as each batch is
 *   planned; the group's end compares the pool's row with what the batches moved.
 * - Batches overlap. While the server writes a batch, the settler reads the next one on a
 *   second connection (`PgShared.settlementReader`, outside the transaction) and plans it, so
 *   neither waits for the other. The reader sees what is committed: this transaction's own
 *   batches are kept out of what it reads by `after` (each endpoint's last call settled in
 *   the settler's run, by this transaction or the run's groups committed before it:
 *   `PgSettlementGroups`; the queue is read past it, and a batch deletes only past it), and their
 *   refunds are added to the hourly tallies it reads. The rest a plan needs from the batches
 *   before it is carried here rather than read back: the pool's balance (the transaction
 *   holds its row lock), the next batch id, and the receipt chain's head
 *   (`ReceiptsTable.chain`). The next round's pending endpoints are read on the reader
 *   too, while the round's last batch is written, each endpoint's head taken past its `after`.
 */
import type { BatchView } from '../../../protocol/settlement';
import { HOUR_MS, batchView } from '../settlement';
import type { BatchRow, Economics, NextBatch, Planner, SettlementTable, UnsettledCall } from '../settlement';
import { balance } from '../sql/ledger';
import { PLANNING, Q as SQL, ZERO_ECONOMICS } from '../sql/settlement';
import { GroupRun, batchFigures, batchLeaves, batchTransfers, checkMarked, notPending } from '../settlement-plan';
import { checkTransfer } from '../ledger';
import { InvariantError } from '../../../protocol/coded-error';
import { MissingReceiptError, type ReceiptChain, type ReceiptsTable } from '../receipts';
import type { KeyAccounts } from '../sql/keys';
import { sql, type PgConn } from './conn';
import { NOTHING_BEFORE, Q, pendingOrderOf, writeParams, type CallRow, type QueuePosition } from './settlement-sql';

/** A batch's reads: its endpoint's economics and its calls, after `after` in the queue. */
interface Reads {
  endpointId: string;
  economics: Economics;
  rows: CallRow[];
  after: QueuePosition;
  /** Read in the transaction (which sees its own batches), not on the reader. */
  inTransaction: boolean;
}

/** A planned batch: its row, and the parameters of the statement that writes it. */
interface Planned {
  batch: BatchRow;
  params: Record<string, unknown>;
}

/** One settling transaction: its batches, each read and planned while the one before is written (the file's header says how). */
export class SettlementGroup {
  /** The receipts' chain; a `MissingReceiptError` is thrown only once a batch has calls, as SQLite's `append` throws it. */
  private chain: ReceiptChain | MissingReceiptError | null = null;
  /** What this transaction's batches refunded, per endpoint and clock hour (the reader does not see it). */
  private readonly refundedHere = new Map<string, Map<number, number>>();
  /** What the group's transfers moved so far, per account: written at its end (`Q.balances`). */
  private readonly moves = new Map<string, number>();
  /** The reader failed: the group reads in the transaction from then on. */
  private readerFailed = false;

  constructor(
    /** The transaction's connection: every write, and what must see them. */
    private readonly c: PgConn,
    /** The connection that reads batches ahead (`PgShared.settlementReader`). */
    private readonly reader: PgConn,
    private readonly receipts: ReceiptsTable,
    /** The pool's balance when the group starts (its row locked). */
    private readonly poolBefore: number,
    private nextId: number,
    private readonly boundary: number,
    private readonly at: number,
    private readonly planner: Planner,
    /**
     * Each endpoint's last call settled: by the run's groups committed before this one when it
     * starts (`PgSettlementGroups`), then by this transaction.
     */
    readonly settledTo: Map<string, QueuePosition>,
    /** Each key's account (the store's one map): filled as batches are read, read as they are planned. */
    private readonly keyAccounts: KeyAccounts,
  ) {}

  /** The pool's balance after the batches planned so far. */
  private get pool(): number {
    return this.poolBefore + (this.moves.get('pool') ?? 0);
  }

  async run(run: GroupRun): Promise<BatchView[]> {
    if (this.receipts.enabled) {
      this.chain = await this.receipts.chain(this.nextId).catch((err: unknown) => {
        if (err instanceof MissingReceiptError) return err;
        throw err;
      });
    }
    let reading: Promise<Reads> | null = null;
    let walking: Promise<string[]> | null = null;
    let writing: Promise<void> | null = null;
    try {
      for (let step = run.step(); step !== null;) {
        if (step === 'round') {
          run.startRound(await (walking ?? this.pending(writing)));
          walking = null;
          step = run.step();
          continue;
        }
        const reads: Reads = await (reading ?? this.read(step.endpointId, step.cap, writing));
        reading = null;
        const planned = this.plan(reads);
        await writing;
        writing = null;
        if (planned !== null) writing = handled(this.write(planned));
        run.committed(planned === null ? null : batchView(planned.batch));
        step = run.step();
        // The next batch of the round, or the next round's endpoints, are read while this one is written.
        if (step === 'round') walking = handled(this.pending(writing));
        else if (step !== null) reading = handled(this.read(step.endpointId, step.cap, writing));
      }
      await writing;
      await this.moveBalances();
    } catch (err) {
      // Nothing may still run on the transaction's connection when it rolls back.
      await Promise.allSettled([writing, reading, walking]);
      throw err;
    }
    const poolAfter = await balance(this.c, 'pool');
    if (poolAfter !== this.pool) {
      throw new InvariantError(
        `settlement: the pool's balance is ${poolAfter} after the group, not ${this.pool} (${this.poolBefore} before)`,
      );
    }
    return run.made;
  }

  /** Read `endpointId`'s next calls (`readOn`), on the reader while it can (`ahead`). */
  private read(endpointId: string, cap: number, before: Promise<void> | null): Promise<Reads> {
    return this.ahead(before, (conn) => this.readOn(conn, endpointId, cap));
  }

  /** The endpoints pending at the boundary, oldest head first, each past its cursor (`ahead`). */
  private pending(before: Promise<void> | null): Promise<string[]> {
    return this.ahead(before, (conn) => pendingOrderOf(conn, this.boundary, this.settledTo));
  }

  /**
   * Run `query` on the reader (outside the transaction; see `plan`). When the reader cannot
   * read (no connection to be had: the server's `max_connections`), this and the group's later
   * reads run in the transaction instead, once the batch `before` is written: slower, as the
   * two no longer overlap, but the settler goes on.
   */
  private async ahead<T>(before: Promise<void> | null, query: (conn: PgConn) => Promise<T>): Promise<T> {
    if (!this.readerFailed) {
      try {
        return await query(this.reader);
      } catch {
        this.readerFailed = true;
      }
    }
    await before;
    return query(this.c);
  }

  private async readOn(conn: PgConn, endpointId: string, cap: number): Promise<Reads> {
    const after = this.settledTo.get(endpointId) ?? NOTHING_BEFORE;
    const economics = (await conn.get<Economics>(SQL.economics, [endpointId])) ?? ZERO_ECONOMICS;
    const rows = await conn.raw<CallRow>(Q.calls, {
      endpoint: endpointId,
      boundary: this.boundary,
      cap,
      after_received_at: after.received_at,
      after_call_id: after.call_id,
    });
    // The accounts of the batch's keys not met before: one more statement, on the same connection.
    await this.keyAccounts.fill(conn, keysOf(rows));
    return { endpointId, economics, rows, after, inTransaction: conn === this.c };
  }

  /**
   * Plan a batch of what `read` read, as the batch after those planned so far, and make its
   * statement's parameters; null when it has no calls. The reader sees the queue and the hourly
   * tallies as committed: this transaction's own batches are left out of the queue by `after`,
   * and added to the tallies here (a read in the transaction sees them already).
   */
  private plan({ endpointId, economics, rows, after, inTransaction }: Reads): Planned | null {
    if (rows.length === 0) return null;
    const here = inTransaction ? undefined : this.refundedHere.get(endpointId);
    const calls: UnsettledCall[] = new Array<UnsettledCall>(rows.length);
    const refunded = new Map<number, number>();
    for (let i = 0; i < rows.length; i++) {
      const [call_id, key_id, outcome, started_at, received_at, refunds, reserved, uncovered] = rows[i]!;
      calls[i] = { call_id, key_id, outcome, started_at, received_at, reserved, uncovered };
      const hour = Math.floor(started_at / HOUR_MS);
      refunded.set(hour, (refunds ?? 0) + (here?.get(hour) ?? 0));
    }
    const plan = this.planner({
      endpointId,
      calls,
      economics,
      pool: this.pool,
      refundedInHour: (hour) => {
        const refunds = refunded.get(hour);
        if (refunds === undefined) throw new InvariantError(`settlement: hour ${hour} is not the hour of a call of the batch`);
        return refunds;
      },
    });
    const chain = this.chain;
    if (chain instanceof MissingReceiptError) throw chain;
    const batch: BatchRow = { id: this.nextId++, endpoint_id: endpointId, created_at: this.at, ...batchFigures(calls.length, plan) };
    // Premiums first, then the fee, then refunds: the pool only grows until the refunds.
    const transfers = batchTransfers(plan, batch.id, this.at, (keyId) => this.keyAccounts.of(keyId));
    for (const transfer of transfers) {
      checkTransfer(transfer);
      for (const { account, amount } of transfer.postings) this.moves.set(account, (this.moves.get(account) ?? 0) + amount);
    }
    // The pool's CHECK (balance ≥ 0) only sees the group's end; its lowest point is here.
    if (this.pool < 0) throw new InvariantError(`settlement: batch ${batch.id} would leave the pool at ${this.pool}`);
    const hours = [...plan.refundsByHour].filter(([, amount]) => amount > 0);
    if (hours.length > 0) {
      const tally = this.refundedHere.get(endpointId) ?? new Map<number, number>();
      for (const [hour, amount] of hours) tally.set(hour, (tally.get(hour) ?? 0) + amount);
      this.refundedHere.set(endpointId, tally);
    }
    const last = calls[calls.length - 1]!;
    this.settledTo.set(endpointId, last);

    // The receipt's tree is hashed here, while the server writes the batch before.
    const core = this.receipts.core;
    const signed =
      chain === null
        ? null
        : chain.sign(batch, core.startTree(batchLeaves(batch, core.provider(endpointId), calls, plan, core)), calls.length);
    return { batch, params: writeParams(batch, plan, transfers, hours, after, last, signed) };
  }

  /** Move every balance the group's transfers touched, once per account, by what they moved in all. */
  private async moveBalances(): Promise<void> {
    if (this.moves.size === 0) return;
    await this.c.value(Q.balances, { account: [...this.moves.keys()], amount: [...this.moves.values()] });
  }

  /** Write `planned` in one statement, and check what it settled. */
  private async write({ batch, params }: Planned): Promise<void> {
    const done = (await this.c.get<{ settled: number; missed: string | null }>(Q.write, params))!;
    if (done.missed !== null) throw notPending(done.missed);
    checkMarked(batch.calls, done.settled);
  }
}

const GROUP = {
  lockPool: sql(`SELECT balance FROM account_balances WHERE account = 'pool' FOR UPDATE`),
  nextId: sql(`SELECT coalesce(max(id), 0) + 1 FROM settlement_batches`),
};

/**
 * PostgreSQL's group commit of settlement batches (`SettlementTable.settleGroup`; the rest of
 * the family is `../sql/settlement.ts`): ONE transaction under the store's writer lock
 * (`serial`), which first locks the pool account's balance row and numbers the first batch
 * `max(id) + 1`, its batches a `SettlementGroup`.
 */
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
    private readonly receipts: ReceiptsTable,
    /** A connection of its own that reads batches ahead (`PgShared.settlementReader`). */
    private readonly reader: PgConn,
    /** Each key's account (`PgShared.keyAccounts`). */
    private readonly keyAccounts: KeyAccounts,
  ) {}

  async settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): Promise<BatchView[]> {
    const settledTo = new Map(this.run?.next === next ? this.run.settledTo : []);
    const made = await this.conn.tx(async (c) => {
      await c.run(PLANNING);
      const pool = (await c.value<number>(GROUP.lockPool)) ?? 0;
      const nextId = (await c.value<number>(GROUP.nextId))!;
      const group = new SettlementGroup(c, this.reader, this.receipts.on(c), pool, nextId, boundary, at, plan, settledTo, this.keyAccounts);
      return group.run(new GroupRun(next, budgetCalls));
    }, 'serial');
    this.run = { next, settledTo }; // committed
    return made;
  }
}

/** The key ids of a batch's call rows (keyless calls have none). */
function* keysOf(rows: readonly CallRow[]): Iterable<string> {
  for (const row of rows) if (row[1] !== null) yield row[1];
}

/** `promise`, marked handled now: it is awaited later, maybe after it failed. */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
