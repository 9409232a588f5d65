/**
 * Settlement batches: the SQL behind the settler (control/settler/). One batch is one
 * endpoint's oldest unsettled outcomes (at most the batch cap), committed in ONE IMMEDIATE
 * transaction: the batch row, every outcome marked settled with its amounts, the ledger
 * transfers and balances, and the hourly refund tally. A crash before the commit leaves none
 * of it; `settled_batch IS NULL` in every selection makes re-running it settle each call once.
 * `settleGroup` commits several batches in one transaction (group commit): each batch is
 * still whole, and one commit instead of many saves an fsync per batch and, because the
 * endpoints' outcome rows share pages, most of the page writes.
 *
 * Ledger entries are aggregated per batch: one premium transfer (key → pool) and one refund
 * transfer (pool → key) per key, and one treasury-fee transfer (pool → treasury); each call's
 * own premium, refund, refund owed and clamp are on its outcome row, and `ledger verify`
 * checks that the two agree. Premiums are booked before refunds, so the pool's running
 * balance never dips below what the batch's call-by-call arithmetic allowed.
 *
 * Each batch's signed receipt (`receipts.ts`) is written in the same transaction, over the
 * leaves of its calls in settlement order with the amounts written on their rows.
 */
import type { Db } from './db';
import { COVERED_FAILURES, type Outcome } from '../../protocol/outcome';
import { keyAccount, type BatchView, type Clamp } from '../../protocol/settlement';
import type { LedgerTable } from './ledger';
import type { ReceiptsTable } from './receipts';

/** An outcome waiting for settlement, in settlement order (received, then call id). */
export interface UnsettledCall {
  call_id: string;
  key_id: string | null;
  outcome: Outcome;
  started_at: number;
  received_at: number;
}

/** An endpoint's money settings, read at settlement time (removed endpoints included). */
export interface Economics {
  price: number;
  premium: number;
  refund_cap_per_hour: number;
  treasury_fee_bps: number;
}

/** What the planner is given for one batch. */
export interface PlanInput {
  endpointId: string;
  calls: UnsettledCall[];
  economics: Economics;
  /** The pool's balance before this batch. */
  pool: number;
  /** Refunds already paid for this endpoint in the clock hour `hour` (ms / 3.6e6). */
  refundedInHour(hour: number): number;
}

export interface CallAmounts {
  premium: number;
  refund: number;
  refund_owed: number;
  clamp: Clamp | null;
}

/**
 * A batch's money, decided by the settler's planner. Every call not in `exceptions` gets the
 * standard amounts: `premium` for a keyed `ok`, `owed` as refund and refund owed for a keyed
 * covered failure, 0 otherwise.
 */
export interface BatchPlan {
  standard: { premium: number; owed: number };
  exceptions: Map<string, CallAmounts>;
  /** Premium collected per key id, refund paid per key id (zero entries omitted). */
  premiums: Map<string, number>;
  refunds: Map<string, number>;
  treasuryFees: number;
  /** Refunds paid per clock hour of the calls' start. */
  refundsByHour: Map<number, number>;
  totals: { premiums: number; refunds: number; refunds_owed: number; clamped_calls: number };
}

export type Planner = (input: PlanInput) => BatchPlan;

/**
 * Names the endpoint and the most calls of a group's next batch, or null to end the group.
 * `previousMade` says whether the previous one gave a batch (null on the group's first call).
 */
/**
 * Picks the batches of a group (`settleGroup`): `next` names the next endpoint and cap, null to
 * end the group, or `'round'` to be handed the endpoints pending now (`startRound`) and asked
 * again. `previousMade` says whether the batch it named last had calls (null: none named yet).
 */
export interface NextBatch {
  next(previousMade: boolean | null): { endpointId: string; cap: number } | 'round' | null;
  startRound(pending: readonly string[]): void;
}

export const HOUR_MS = 3_600_000;

const COVERED = [...COVERED_FAILURES].map((o) => `'${o}'`).join(', ');
/**
 * `e(id)`: the distinct endpoints with unsettled outcomes, one index seek each
 * (`outcomes_unsettled`) instead of a scan of the backlog.
 */
const PENDING_ENDPOINTS = `WITH RECURSIVE e(id) AS (
  SELECT (SELECT min(endpoint_id) FROM outcomes WHERE settled_batch IS NULL)
  UNION ALL
  SELECT (SELECT min(endpoint_id) FROM outcomes WHERE settled_batch IS NULL AND endpoint_id > e.id) FROM e WHERE e.id IS NOT NULL)`;

const ZERO_ECONOMICS: Economics = { price: 0, premium: 0, refund_cap_per_hour: 0, treasury_fee_bps: 0 };

/** A `settlement_batches` row: the view's fields, with the time in ms. */
type BatchRow = Omit<BatchView, 'created_at'> & { created_at: number };

export const batchView = (row: BatchRow): BatchView => ({ ...row, created_at: new Date(row.created_at).toISOString() });

/**
 * A call's amounts when the plan has no exception for it: what `standardStmt` writes on its
 * row, computed here for the call's receipt leaf (`ledger verify` recomputes every root from
 * the rows, so the two cannot drift unnoticed).
 */
function standardAmounts(call: UnsettledCall, plan: BatchPlan): CallAmounts {
  if (call.key_id === null) return NOTHING;
  if (call.outcome === 'ok')
    return plan.standard.premium === 0 ? NOTHING : { premium: plan.standard.premium, refund: 0, refund_owed: 0, clamp: null };
  if (COVERED_FAILURES.has(call.outcome)) return { premium: 0, refund: plan.standard.owed, refund_owed: plan.standard.owed, clamp: null };
  return NOTHING;
}
const NOTHING: CallAmounts = Object.freeze({ premium: 0, refund: 0, refund_owed: 0, clamp: null });

export class SettlementTable {
  private readonly ledger: LedgerTable;
  private readonly receipts: ReceiptsTable;
  private readonly pendingEndpointsStmt;
  private readonly headStmt;
  private readonly selectStmt;
  private readonly economicsStmt;
  private readonly hourStmt;
  private readonly addHourStmt;
  private readonly insertBatchStmt;
  private readonly exceptionStmt;
  private readonly standardStmt;
  private readonly backlogStmt;
  private readonly oldestStmt;
  private readonly lastBatchStmt;
  private readonly batchTx;
  private readonly groupTx;

  constructor(db: Db, ledger: LedgerTable, receipts: ReceiptsTable) {
    this.ledger = ledger;
    this.receipts = receipts;
    // Distinct endpoints with unsettled outcomes: one index seek per endpoint (outcomes_unsettled).
    this.pendingEndpointsStmt = db
      .prepare(
        `${PENDING_ENDPOINTS}
         SELECT id FROM e WHERE id IS NOT NULL`,
      )
      .pluck();
    this.headStmt = db
      .prepare(`SELECT received_at FROM outcomes WHERE endpoint_id = ? AND settled_batch IS NULL ORDER BY received_at, call_id LIMIT 1`)
      .pluck();
    this.selectStmt = db.prepare(
      `SELECT call_id, key_id, outcome, started_at, received_at FROM outcomes
       WHERE endpoint_id = ? AND settled_batch IS NULL AND received_at <= ?
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
      `UPDATE outcomes SET settled_batch = ?, premium = ?, refund = ?, refund_owed = ?, clamp = ?
       WHERE call_id = ? AND settled_batch IS NULL`,
    );
    // Everything else in the batch in one statement: the rows up to the last selected one in
    // settlement order are exactly the selected ones (the order is total; the transaction holds).
    this.standardStmt = db.prepare(
      `UPDATE outcomes SET settled_batch = @batch,
         premium = CASE WHEN key_id IS NOT NULL AND outcome = 'ok' THEN @premium ELSE 0 END,
         refund = CASE WHEN key_id IS NOT NULL AND outcome IN (${COVERED}) THEN @owed ELSE 0 END,
         refund_owed = CASE WHEN key_id IS NOT NULL AND outcome IN (${COVERED}) THEN @owed ELSE 0 END,
         clamp = NULL
       WHERE endpoint_id = @endpoint AND settled_batch IS NULL AND (received_at, call_id) <= (@received_at, @call_id)`,
    );
    this.backlogStmt = db.prepare(`SELECT count(*) FROM outcomes WHERE settled_batch IS NULL`).pluck();
    // The oldest head among the endpoints: an index seek per endpoint, not a scan of the backlog.
    this.oldestStmt = db
      .prepare(
        `${PENDING_ENDPOINTS}
         SELECT min((SELECT received_at FROM outcomes o WHERE o.endpoint_id = e.id AND o.settled_batch IS NULL
                     ORDER BY o.received_at, o.call_id LIMIT 1))
         FROM e WHERE e.id IS NOT NULL`,
      )
      .pluck();
    this.lastBatchStmt = db.prepare(`SELECT * FROM settlement_batches ORDER BY id DESC LIMIT 1`);
    this.batchTx = db.transaction((endpointId: string, boundary: number, cap: number, at: number, plan: Planner) =>
      this.commit(endpointId, boundary, cap, at, plan),
    );
    this.groupTx = db.transaction((next: NextBatch, boundary: number, at: number, plan: Planner, budget: number) => {
      const made: BatchView[] = [];
      let calls = 0;
      let previous: boolean | null = null;
      while (calls < budget) {
        const wanted = next.next(previous);
        if (wanted === null) break;
        if (wanted === 'round') {
          next.startRound(this.pendingEndpoints(boundary));
          previous = null;
          continue;
        }
        const batch = this.commit(wanted.endpointId, boundary, wanted.cap, at, plan);
        previous = batch !== null;
        if (batch !== null) {
          made.push(batch);
          calls += batch.calls;
        }
      }
      return made;
    });
  }

  /** Endpoints with outcomes received at or before `boundary` still unsettled, oldest head first. */
  pendingEndpoints(boundary: number): string[] {
    const heads: { id: string; head: number }[] = [];
    for (const id of this.pendingEndpointsStmt.all() as string[]) {
      const head = this.headStmt.get(id) as number | undefined;
      if (head !== undefined && head <= boundary) heads.push({ id, head });
    }
    return heads.sort((a, b) => a.head - b.head || (a.id < b.id ? -1 : 1)).map((h) => h.id);
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
   * count reads the backlog's index (about 1 µs per pending outcome); the age is a seek per
   * endpoint.
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
    const t = plan.totals;
    const batch = this.insertBatchStmt.get(
      endpointId,
      at,
      calls.length,
      t.premiums,
      plan.treasuryFees,
      t.refunds,
      t.refunds_owed,
      t.clamped_calls,
    ) as BatchRow;
    // The receipt's tree is computed (on the hasher's thread) while the rows are written.
    const tree = this.receipts.enabled ? this.receipts.startTree(this.leaves(batch, calls, plan)) : null;

    for (const [callId, a] of plan.exceptions) {
      if (this.exceptionStmt.run(batch.id, a.premium, a.refund, a.refund_owed, a.clamp, callId).changes !== 1) {
        throw new Error(`settlement: call ${callId} was not pending`);
      }
    }
    const last = calls[calls.length - 1]!;
    const standard = this.standardStmt.run({
      batch: batch.id,
      premium: plan.standard.premium,
      owed: plan.standard.owed,
      endpoint: endpointId,
      received_at: last.received_at,
      call_id: last.call_id,
    }).changes;
    if (standard + plan.exceptions.size !== calls.length) {
      throw new Error(`settlement: batch of ${calls.length} calls marked ${standard + plan.exceptions.size}`);
    }

    // Premiums first, then the fee, then refunds: the pool only grows until the refunds.
    const base = { at, actor: 'settler', batchId: batch.id };
    for (const [keyId, amount] of plan.premiums) {
      this.ledger.transfer({
        ...base,
        kind: 'premium',
        postings: [
          { account: keyAccount(keyId), amount: -amount },
          { account: 'pool', amount },
        ],
      });
    }
    if (plan.treasuryFees > 0) {
      this.ledger.transfer({
        ...base,
        kind: 'treasury_fee',
        postings: [
          { account: 'pool', amount: -plan.treasuryFees },
          { account: 'treasury', amount: plan.treasuryFees },
        ],
      });
    }
    for (const [keyId, amount] of plan.refunds) {
      this.ledger.transfer({
        ...base,
        kind: 'refund',
        postings: [
          { account: 'pool', amount: -amount },
          { account: keyAccount(keyId), amount },
        ],
      });
    }
    for (const [hour, amount] of plan.refundsByHour) if (amount > 0) this.addHourStmt.run(endpointId, hour, amount);
    if (tree !== null) this.receipts.append(batch, tree, calls.length);
    return batchView(batch);
  }

  /** The canonical receipt leaves of a batch's calls, in settlement order; their sums must be the batch's. */
  private leaves(batch: BatchRow, calls: UnsettledCall[], plan: BatchPlan): string[] {
    const provider = this.receipts.provider(batch.endpoint_id);
    const leaves: string[] = new Array<string>(calls.length);
    const checkExceptions = plan.exceptions.size > 0;
    let premiums = 0;
    let refunds = 0;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      const a = (checkExceptions ? plan.exceptions.get(call.call_id) : undefined) ?? standardAmounts(call, plan);
      premiums += a.premium;
      refunds += a.refund;
      leaves[i] = this.receipts.leaf(batch.id, provider, {
        call_id: call.call_id,
        outcome: call.outcome,
        premium: a.premium,
        refund: a.refund,
        clamp: a.clamp,
      });
    }
    if (premiums !== batch.premiums || refunds !== batch.refunds) {
      throw new Error(
        `settlement: batch ${batch.id}'s leaves sum to premiums ${premiums}, refunds ${refunds}; the batch says ${batch.premiums}, ${batch.refunds}`,
      );
    }
    return leaves;
  }
}
