/**
 * The shapes of a settlement plan (what the planner is given and what it decides), apart from
 * `settlement.ts`'s SQL so that `settlement-plan.ts` and the PostgreSQL store import them from
 * a module that imports neither (`settlement.ts` re-exports them).
 */
import type { Outcome } from '../../protocol/outcome';
import type { Clamp } from '../../protocol/settlement';

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
 * (PostgreSQL's reads resume past them: `pg/settlement.ts`).
 */
export interface NextBatch {
  next(previousMade: boolean | null): { endpointId: string; cap: number } | 'round' | null;
  startRound(pending: readonly string[]): void;
}
