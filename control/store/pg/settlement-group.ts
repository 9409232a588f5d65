/**
 * One PostgreSQL settling transaction's batches (`SettlementGroup`), for `settlement.ts`, which
 * opens the transaction, locks the pool's row and numbers the first batch.
 *
 * - A batch is three statements whatever its size. Its reads: its endpoint's economics, and its
 *   calls from the settler's queue, each with the refunds its clock hour already paid. Its
 *   writes, all in ONE statement (`Q.write`): the batch row; its calls' queue entries deleted
 *   and their `settled_calls` rows inserted from what was deleted, with the plan's amounts for
 *   its exceptions and the standard ones for the rest; its transfers and their postings (at
 *   most three, with a posting per key: `TRANSFER_CTES`, each checked first as
 *   `PgLedgerTable.transferAll` checks them); the hourly tallies; and its receipt.
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
 *   `PgSettlementTable`; the queue is read past it, and a batch deletes only past it), and their
 *   refunds are added to the hourly tallies it reads. The rest a plan needs from the batches
 *   before it is carried here rather than read back: the pool's balance (the transaction
 *   holds its row lock), the next batch id, and the receipt chain's head
 *   (`PgReceiptsTable.chain`). The next round's pending endpoints are read on the reader
 *   too, while the round's last batch is written, each endpoint's head taken past its `after`.
 */
import type { BatchView } from '../../../protocol/settlement';
import {
  HOUR_MS,
  SETTLED_COLUMNS,
  ZERO_ECONOMICS,
  batchView,
  standardAmountColumns,
  type BatchRow,
  type BatchPlan,
  type Economics,
  type Planner,
  type UnsettledCall,
} from '../settlement';
import { GroupRun, batchFigures, batchLeaves, batchTransfers, checkMarked, notPending, pendingOrder } from '../settlement-plan';
import { checkTransfer, type TransferInput } from '../ledger-core';
import { MissingReceiptError, type SignedReceipt } from '../receipts-core';
import { sql, type PgConn } from './conn';
import { BALANCE_CTES, TRANSFER_CTES, transferParams } from './ledger';
import type { PgReceiptsTable, ReceiptChain } from './receipts';

/** The standard amounts, column by column (`standardAmountColumns`), and the columns they fill. */
const STANDARD = standardAmountColumns((p) => `@std_${p}::bigint`);
const AMOUNTS = ['premium', 'refund', 'refund_owed', 'clamp'] as const;

/**
 * Before every queue entry in settlement order: the empty call id sorts first in the "C"
 * collation, and no `received_at` (control's clock, in ms) is that far in the past.
 */
const NOTHING_BEFORE: QueuePosition = { received_at: Number.MIN_SAFE_INTEGER, call_id: '' };

/** A place in the settler's queue of one endpoint. */
export interface QueuePosition {
  received_at: number;
  call_id: string;
}

/**
 * The endpoints in the settler's queue (a null row ends them), found as SQLite's
 * `PENDING_ENDPOINTS` finds them but from the last: one index seek per endpoint, each landing
 * on its newest entries. Entries a batch deleted stay in the index until a vacuum, and they are
 * an endpoint's oldest, so a walk from the first would step over every one of them.
 */
export const PG_PENDING_ENDPOINTS = `WITH RECURSIVE e(id) AS (
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes)
  UNION ALL
  SELECT (SELECT max(endpoint_id) FROM unsettled_outcomes WHERE endpoint_id < e.id) FROM e WHERE e.id IS NOT NULL)`;

const Q = {
  // Each endpoint with unsettled outcomes and when its oldest one was received: its oldest past
  // its cursor (`settledTo`, in the unnested arrays) when it has one.
  heads: sql(
    `${PG_PENDING_ENDPOINTS}
     SELECT e.id, (SELECT received_at FROM unsettled_outcomes q WHERE q.endpoint_id = e.id
                     AND (q.received_at, q.call_id) > (coalesce(c.received_at, ${NOTHING_BEFORE.received_at}), coalesce(c.call_id, ''))
                   ORDER BY q.received_at, q.call_id LIMIT 1) AS head
     FROM e LEFT JOIN unnest(@cursor_endpoint::text[], @cursor_received_at::bigint[], @cursor_call_id::text[])
       AS c (endpoint_id, received_at, call_id) ON c.endpoint_id = e.id
     WHERE e.id IS NOT NULL`,
  ),
  pool: sql(`SELECT balance FROM account_balances WHERE account = 'pool'`),
  // A batch's calls in settlement order, each with what its endpoint already refunded in the
  // call's clock hour (null: nothing yet). The hour is floor(started_at / 1 h), as HOUR_MS.
  // `after`: the last call of the endpoint's batch before in the run (`NOTHING_BEFORE` for its
  // first), so the index scan starts past the entries that batch deleted instead of stepping
  // over them.
  calls: sql(
    `SELECT c.call_id, c.key_id, c.outcome, c.started_at, c.received_at, h.refunds
     FROM (SELECT call_id, key_id, outcome, started_at, received_at FROM unsettled_outcomes
           WHERE endpoint_id = @endpoint AND received_at <= @boundary
             AND (received_at, call_id) > (@after_received_at::bigint, @after_call_id::text)
           ORDER BY received_at, call_id LIMIT @cap) AS c
       LEFT JOIN refund_hours h ON h.endpoint_id = @endpoint
         AND h.hour = c.started_at / ${HOUR_MS} - CASE WHEN c.started_at % ${HOUR_MS} < 0 THEN 1 ELSE 0 END
     ORDER BY c.received_at, c.call_id`,
  ),
  economics: sql(`SELECT price, premium, refund_cap_per_hour, treasury_fee_bps FROM endpoints WHERE id = ?`),
  // What the group's transfers moved, once per account, at its end.
  balances: sql(`WITH ${BALANCE_CTES} SELECT count(*) FROM moves`),
  // A batch's writes in one statement (the file's header lists them). The queue's entries past
  // `after` up to the batch's last call in settlement order are its calls (the order is total;
  // the writer lock holds); `x` holds the plan's exceptions. Answers how many calls it settled,
  // and an exception it did not find in the queue, if any (the exceptions are distinct calls,
  // so with none missing every one of them was settled as an exception): a
  // call ingested into that range since the batch was read (its `received_at` older than calls
  // already queued: another control's clock behind) makes the count differ, and the group rolls
  // back and is settled again on the next run, that call with it.
  write: sql(
    `WITH ${TRANSFER_CTES},
     batch_row AS (
       INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
       VALUES (@batch, @endpoint, @created_at, @calls, @premiums, @treasury_fees, @refunds, @refunds_owed, @clamped_calls)),
     x AS (
       SELECT * FROM unnest(@x_call_id::text[], @x_premium::bigint[], @x_refund::bigint[], @x_refund_owed::bigint[], @x_clamp::text[])
         AS x (call_id, premium, refund, refund_owed, clamp)),
     q AS (
       DELETE FROM unsettled_outcomes
       WHERE endpoint_id = @endpoint AND (received_at, call_id) > (@after_received_at::bigint, @after_call_id::text)
         AND (received_at, call_id) <= (@last_received_at::bigint, @last_call_id::text)
       RETURNING *),
     settled AS (
       INSERT INTO settled_calls (${SETTLED_COLUMNS})
       SELECT q.call_id, @batch::bigint, q.endpoint_id, q.key_id, q.outcome, q.started_at, q.received_at,
         ${STANDARD.map((standard, i) => `CASE WHEN x.call_id IS NULL THEN ${standard} ELSE x.${AMOUNTS[i]} END`).join(', ')}
       FROM q LEFT JOIN x ON x.call_id = q.call_id
       RETURNING 1),
     hours AS (
       INSERT INTO refund_hours (endpoint_id, hour, refunds)
       SELECT @endpoint, hour, refunds FROM unnest(@hour::bigint[], @hour_refunds::bigint[]) AS h (hour, refunds)
       ON CONFLICT (endpoint_id, hour) DO UPDATE SET refunds = refund_hours.refunds + excluded.refunds),
     receipt AS (
       INSERT INTO receipts (batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig, subtrees)
       SELECT @batch, @r_v, @r_prev, @r_root, @r_tree_size, @refunds, @premiums, @r_settled_at, @r_kid, @r_sig, @r_subtrees
       WHERE @r_v::bigint IS NOT NULL)
     SELECT (SELECT count(*) FROM settled) AS settled,
            (SELECT min(x.call_id) FROM x WHERE NOT EXISTS (SELECT 1 FROM q WHERE q.call_id = x.call_id)) AS missed`,
  ),
};

/** A row of `Q.calls`: the call's columns, then its hour's refunds so far (null: none). */
type CallRow = [string, string | null, UnsettledCall['outcome'], number, number, number | null];

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
    private readonly receipts: PgReceiptsTable,
    /** The pool's balance after the batches planned so far. */
    private pool: number,
    private nextId: number,
    private readonly boundary: number,
    private readonly at: number,
    private readonly planner: Planner,
    /**
     * Each endpoint's last call settled: by the run's groups committed before this one when it
     * starts (`PgSettlementTable`), then by this transaction.
     */
    readonly settledTo: Map<string, QueuePosition>,
  ) {}

  async run(run: GroupRun): Promise<BatchView[]> {
    const poolBefore = this.pool;
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
    const poolAfter = (await this.c.value<number>(Q.pool)) ?? 0;
    if (poolAfter !== this.pool) {
      throw new Error(`settlement: the pool's balance is ${poolAfter} after the group, not ${this.pool} (${poolBefore} before)`);
    }
    return run.made;
  }

  /**
   * Read `endpointId`'s next calls on the reader (outside the transaction; see `plan`). When the
   * reader cannot read (no connection to be had: the server's `max_connections`), this and the
   * group's later batches read in the transaction instead, once the batch `before` is written:
   * slower, as the two no longer overlap, but the settler goes on.
   */
  private async read(endpointId: string, cap: number, before: Promise<void> | null): Promise<Reads> {
    if (!this.readerFailed) {
      try {
        return await this.readOn(this.reader, endpointId, cap);
      } catch {
        this.readerFailed = true;
      }
    }
    await before;
    return this.readOn(this.c, endpointId, cap);
  }

  /**
   * The endpoints pending at the boundary, oldest head first, each past its cursor: on the
   * reader, or in the transaction once the batch `before` is written when the reader failed
   * (as `read`).
   */
  private async pending(before: Promise<void> | null): Promise<string[]> {
    if (!this.readerFailed) {
      try {
        return await pendingOrderOf(this.reader, this.boundary, this.settledTo);
      } catch {
        this.readerFailed = true;
      }
    }
    await before;
    return pendingOrderOf(this.c, this.boundary, this.settledTo);
  }

  private async readOn(conn: PgConn, endpointId: string, cap: number): Promise<Reads> {
    const after = this.settledTo.get(endpointId) ?? NOTHING_BEFORE;
    const economics = (await conn.get<Economics>(Q.economics, [endpointId])) ?? ZERO_ECONOMICS;
    const rows = await conn.raw<CallRow>(Q.calls, {
      endpoint: endpointId,
      boundary: this.boundary,
      cap,
      after_received_at: after.received_at,
      after_call_id: after.call_id,
    });
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
      const [call_id, key_id, outcome, started_at, received_at, refunds] = rows[i]!;
      calls[i] = { call_id, key_id, outcome, started_at, received_at };
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
        if (refunds === undefined) throw new Error(`settlement: hour ${hour} is not the hour of a call of the batch`);
        return refunds;
      },
    });
    const chain = this.chain;
    if (chain instanceof MissingReceiptError) throw chain;
    const batch: BatchRow = { id: this.nextId++, endpoint_id: endpointId, created_at: this.at, ...batchFigures(calls.length, plan) };
    // Premiums first, then the fee, then refunds: the pool only grows until the refunds.
    const transfers = batchTransfers(plan, batch.id, this.at);
    for (const transfer of transfers) {
      checkTransfer(transfer);
      for (const { account, amount } of transfer.postings) {
        this.moves.set(account, (this.moves.get(account) ?? 0) + amount);
        if (account === 'pool') this.pool += amount;
      }
    }
    // The pool's CHECK (balance ≥ 0) only sees the group's end; its lowest point is here.
    if (this.pool < 0) throw new Error(`settlement: batch ${batch.id} would leave the pool at ${this.pool}`);
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

/** The parameters of `Q.write` for `batch`, planned by `plan`, its calls past `after` up to `last`. */
function writeParams(
  batch: BatchRow,
  plan: BatchPlan,
  transfers: TransferInput[],
  hours: [number, number][],
  after: QueuePosition,
  last: QueuePosition,
  signed: SignedReceipt | null,
): Record<string, unknown> {
  const x = {
    x_call_id: [] as string[],
    x_premium: [] as number[],
    x_refund: [] as number[],
    x_refund_owed: [] as number[],
    x_clamp: [] as (string | null)[],
  };
  for (const [callId, a] of plan.exceptions) {
    x.x_call_id.push(callId);
    x.x_premium.push(a.premium);
    x.x_refund.push(a.refund);
    x.x_refund_owed.push(a.refund_owed);
    x.x_clamp.push(a.clamp);
  }
  const r = signed?.receipt;
  return {
    ...transferParams(transfers),
    batch: batch.id,
    endpoint: batch.endpoint_id,
    created_at: batch.created_at,
    calls: batch.calls,
    premiums: batch.premiums,
    treasury_fees: batch.treasury_fees,
    refunds: batch.refunds,
    refunds_owed: batch.refunds_owed,
    clamped_calls: batch.clamped_calls,
    ...x,
    after_received_at: after.received_at,
    after_call_id: after.call_id,
    last_received_at: last.received_at,
    last_call_id: last.call_id,
    std_premium: plan.standard.premium,
    std_owed: plan.standard.owed,
    hour: hours.map(([hour]) => hour),
    hour_refunds: hours.map(([, amount]) => amount),
    r_v: r?.v ?? null,
    r_prev: r?.prev ?? null,
    r_root: r?.root ?? null,
    r_tree_size: r?.tree_size ?? null,
    r_settled_at: r?.settled_at ?? null,
    r_kid: r?.kid ?? null,
    r_sig: r?.sig ?? null,
    r_subtrees: signed?.subtrees ?? null,
  };
}

/** `promise`, marked handled now: it is awaited later, maybe after it failed. */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * The endpoints pending at `boundary`, oldest head first, as `conn` sees the queue; an endpoint
 * with a cursor in `settledTo` is pending only with a call past it.
 */
export async function pendingOrderOf(
  c: PgConn,
  boundary: number,
  settledTo: ReadonlyMap<string, QueuePosition> = new Map(),
): Promise<string[]> {
  const cursors = [...settledTo];
  const heads = await c.all<{ id: string; head: number | null }>(Q.heads, {
    cursor_endpoint: cursors.map(([endpointId]) => endpointId),
    cursor_received_at: cursors.map(([, at]) => at.received_at),
    cursor_call_id: cursors.map(([, at]) => at.call_id),
  });
  return pendingOrder(heads, boundary);
}
