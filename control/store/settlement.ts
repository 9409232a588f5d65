/**
 * Settlement batches, as callers (the settler, control/settler/) see them. One batch is one
 * endpoint's oldest unsettled outcomes (at most the batch cap), committed in ONE transaction
 * under the writer lock: the batch row, a `settled_calls` row per call with its amounts, the
 * calls' entries deleted from the settler's queue (`unsettled_outcomes`), the ledger transfers
 * and balances, the hourly refund tally, and the batch's signed receipt. A crash before the
 * commit leaves none of it; a batch selects from the queue alone, so re-running it settles each
 * call once (and `settled_calls`' key refuses a call settled twice). Outcome rows themselves are
 * never rewritten (migration 19 says why). `settleGroup` commits several batches in one
 * transaction (group commit): each batch is still whole, and one commit instead of many saves a
 * sync per batch and most of the page writes.
 *
 * Ledger entries are aggregated per batch: at most three transfers (`batchTransfers` in
 * `settlement-plan.ts`); each call's own premium, refund, refund owed and clamp are on its
 * `settled_calls` row, and `ledger verify` checks that the two agree per batch and key. The
 * batch's receipt is over the leaves of its calls in settlement order with the amounts written
 * for them.
 *
 * The implementation is `sql/settlement.ts`, with PostgreSQL's pipelined group commit
 * (`pg/settlement-group.ts`); what a plan implies apart from SQL is `settlement-plan.ts`.
 */
import type { Outcome } from '../../protocol/outcome';
import type { BatchView, Clamp } from '../../protocol/settlement';
import type { PendingTree, ReceiptBatch, ReceiptsCore } from './receipts';

export const HOUR_MS = 3_600_000;

/** A `settlement_batches` row: the view's fields, with the time in ms. */
export type BatchRow = Omit<BatchView, 'created_at'> & { created_at: number };

export const batchView = (row: BatchRow): BatchView => ({ ...row, created_at: new Date(row.created_at).toISOString() });

/** The settlement batches, as `Store.settlement` has them. */
export interface SettlementTable {
  /** Endpoints with outcomes received at or before `boundary` still unsettled, oldest head first. */
  pendingEndpoints(boundary: number): Promise<string[]>;
  /**
   * Settle up to `cap` of `endpointId`'s oldest unsettled outcomes received at or before
   * `boundary`, as one batch in one transaction under the writer lock. Answers the batch, or
   * null when there was nothing to settle.
   */
  settleBatch(endpointId: string, boundary: number, cap: number, at: number, plan: Planner): Promise<BatchView | null>;
  /**
   * Settle several batches in ONE transaction under the writer lock: one batch for each
   * endpoint (and cap) `next` names (null ends the group), until the batches hold at least
   * `budgetCalls` calls. Each batch is as `settleBatch` makes it; if any fails, none of the
   * group commits.
   */
  settleGroup(next: NextBatch, boundary: number, at: number, plan: Planner, budgetCalls: number): Promise<BatchView[]>;
  /**
   * Outcomes not settled yet, and when the oldest of them was received (ms, or null). The
   * count reads the queue (about 1 µs per pending outcome); the age is a seek per endpoint.
   */
  backlog(): Promise<{ count: number; oldest_received_at: number | null }>;
  /** The newest batch, or null. */
  lastBatch(): Promise<BatchView | null>;
}

/**
 * What the settlement uses of the receipts family, on the settling transaction's connection:
 * whether batches get receipts, the leaves and trees (`core`), and `append`, which signs and
 * stores a batch's receipt in that transaction.
 */
export interface SettlingReceipts {
  readonly enabled: boolean;
  readonly core: ReceiptsCore;
  append(batch: ReceiptBatch, tree: PendingTree, treeSize: number): unknown;
}

/** An outcome waiting for settlement, in settlement order (received, then call id). */
export interface UnsettledCall {
  call_id: string;
  key_id: string | null;
  outcome: Outcome;
  started_at: number;
  received_at: number;
  /**
   * The premium the call reserved when a gateway admitted it on a prepaid endpoint (null: a
   * postpaid call). An `ok` call is charged exactly this, whatever the endpoint's premium is now.
   */
  reserved: number | null;
  /** 1: a gateway admitted the call uncovered (protocol/outcome.ts `coverage`), so it moves nothing. */
  uncovered?: number;
}

/** An endpoint's money settings, read at settlement time (removed endpoints included). Caps of 0 are no cap. */
export interface Economics {
  price: number;
  premium: number;
  refund_cap_per_hour: number;
  /** The most one call's refund pays. */
  refund_cap_per_call: number;
  /** The most one batch's refunds pay in all. */
  refund_cap_per_batch: number;
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
  /**
   * Premium collected per key id, refund paid per key id (zero entries omitted): a key's
   * posting in the batch's one premium or refund transfer, in the map's order.
   */
  premiums: Map<string, number>;
  refunds: Map<string, number>;
  treasuryFees: number;
  /** Refunds paid per clock hour of the calls' start. */
  refundsByHour: Map<number, number>;
  totals: { premiums: number; refunds: number; refunds_owed: number; clamped_calls: number };
}

export type Planner = (input: PlanInput) => BatchPlan;

/**
 * Picks the batches of a group (`settleGroup`): `next` names the next endpoint and cap, null to
 * end the group, or `'round'` to be handed the endpoints pending now (`startRound`) and asked
 * again. `previousMade` says whether the batch it named last had calls (null: none named yet).
 * A settler's run hands the same one to each of its groups; a store may carry what the run's
 * committed groups settled from one group to the next only when it is the same object
 * (PostgreSQL's reads resume past them: `pg/settlement-group.ts`).
 */
export interface NextBatch {
  next(previousMade: boolean | null): { endpointId: string; cap: number } | 'round' | null;
  startRound(pending: readonly string[]): void;
}
