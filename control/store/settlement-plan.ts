/**
 * What a settlement batch's plan implies, apart from SQL, shared by the batch commit written
 * once (`sql/settlement.ts`) and PostgreSQL's pipelined group commit (`pg/settlement-group.ts`):
 * each call's amounts when the plan makes no exception for it, the batch row's figures, the
 * receipt leaves of its calls, the ledger transfers the plan books (at most three, in booking
 * order), the order endpoints are settled in, and the group commit's decisions (`GroupRun`).
 */
import { InvariantError } from '../../protocol/coded-error';
import { COVERED_FAILURES } from '../../protocol/outcome';
import type { BatchView } from '../../protocol/settlement';
import { accountLedger } from './accounts';
import { SettlementConflictError } from './errors';
import type { Posting, TransferInput } from './ledger';
import type { LeafRow } from './receipts';
import type { BatchPlan, CallAmounts, NextBatch, UnsettledCall } from './settlement';

const NOTHING: CallAmounts = Object.freeze({ premium: 0, refund: 0, refund_owed: 0, clamp: null });

/**
 * A call's amounts when the plan has no exception for it: what the store's one INSERT of a
 * batch's standard calls writes for it (`standardAmountsSql`), computed here for the call's receipt leaf
 * (`ledger verify` recomputes every root from the rows, so the two cannot drift unnoticed).
 */
export function standardAmounts(call: UnsettledCall, plan: BatchPlan): CallAmounts {
  if (call.key_id === null) return NOTHING;
  if (call.outcome === 'ok')
    return plan.standard.premium === 0 ? NOTHING : { premium: plan.standard.premium, refund: 0, refund_owed: 0, clamp: null };
  if (COVERED_FAILURES.has(call.outcome)) return { premium: 0, refund: plan.standard.owed, refund_owed: plan.standard.owed, clamp: null };
  return NOTHING;
}

/** A batch row's figures for `calls` calls settled by `plan` (besides its id, endpoint and time). */
export function batchFigures(calls: number, plan: BatchPlan) {
  const t = plan.totals;
  return {
    calls,
    premiums: t.premiums,
    treasury_fees: plan.treasuryFees,
    refunds: t.refunds,
    refunds_owed: t.refunds_owed,
    clamped_calls: t.clamped_calls,
  };
}

/** What makes a call's canonical receipt leaf (the store's receipts family). */
export interface LeafMaker {
  leaf(batch: number, provider: string, call: LeafRow): string;
}

/**
 * The canonical receipt leaves of a batch's calls, in settlement order, with the amounts the
 * plan gives each. Throws unless their sums are the batch's premiums and refunds.
 */
export function batchLeaves(
  batch: { id: number; premiums: number; refunds: number },
  provider: string,
  calls: readonly UnsettledCall[],
  plan: BatchPlan,
  receipts: LeafMaker,
): string[] {
  const leaves: string[] = new Array<string>(calls.length);
  const checkExceptions = plan.exceptions.size > 0;
  let premiums = 0;
  let refunds = 0;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const a = (checkExceptions ? plan.exceptions.get(call.call_id) : undefined) ?? standardAmounts(call, plan);
    premiums += a.premium;
    refunds += a.refund;
    leaves[i] = receipts.leaf(batch.id, provider, {
      call_id: call.call_id,
      outcome: call.outcome,
      premium: a.premium,
      refund: a.refund,
      clamp: a.clamp,
    });
  }
  if (premiums !== batch.premiums || refunds !== batch.refunds) {
    throw new InvariantError(
      `settlement: batch ${batch.id}'s leaves sum to premiums ${premiums}, refunds ${refunds}; the batch says ${batch.premiums}, ${batch.refunds}`,
    );
  }
  return leaves;
}

/** A call the plan makes an exception for was settled by someone else meanwhile. */
export const notPending = (callId: string): SettlementConflictError =>
  new SettlementConflictError(`settlement: call ${callId} was not pending`);

/** Throws `SettlementConflictError` unless the batch's UPDATEs marked exactly the calls it selected. */
export function checkMarked(selected: number, marked: number): void {
  if (marked !== selected) throw new SettlementConflictError(`settlement: batch of ${selected} calls marked ${marked}`);
}

/**
 * The ledger transfers `plan` books for batch `batchId`, in booking order, at most three and
 * none without postings:
 *
 * 1. `premium`: −amount on the account (`account:<id>`) of each paying key, the amounts of the
 *    keys of one account summed into one posting, in the order of `plan.premiums`' first key of
 *    each account, then +their sum on the pool;
 * 2. `treasury_fee`: −fee on the pool, +fee on the treasury, when the fee is not 0;
 * 3. `refund`: −their sum on the pool first, then +amount on each refunded key's account, as
 *    the premiums are, in `plan.refunds`' order.
 *
 * `accountOf` gives each key's account id (the store's `KeyAccounts`). The pool's running
 * balance (`ledger verify` orders its postings by transfer id) only grows until the refunds,
 * so it never dips below what the plan's call-by-call arithmetic allowed. Batches settled
 * before this shape booked one premium and one refund transfer per key, and batches settled
 * before accounts held the money posted to `key:<id>`; every shape passes `ledger verify`,
 * which sums postings per batch and account (a key's postings count for its account).
 */
export function batchTransfers(plan: BatchPlan, batchId: number, at: number, accountOf: (keyId: string) => string): TransferInput[] {
  const base = { at, actor: 'settler', batchId };
  const out: TransferInput[] = [];
  if (plan.premiums.size > 0) {
    const [accounts, sum] = accountPostings(plan.premiums, -1, accountOf);
    out.push({ ...base, kind: 'premium', postings: [...accounts, { account: 'pool', amount: sum }] });
  }
  if (plan.treasuryFees > 0) {
    out.push({
      ...base,
      kind: 'treasury_fee',
      postings: [
        { account: 'pool', amount: -plan.treasuryFees },
        { account: 'treasury', amount: plan.treasuryFees },
      ],
    });
  }
  if (plan.refunds.size > 0) {
    const [accounts, sum] = accountPostings(plan.refunds, 1, accountOf);
    out.push({ ...base, kind: 'refund', postings: [{ account: 'pool', amount: -sum }, ...accounts] });
  }
  return out;
}

/** The keys whose account `batchTransfers` needs for `plan`. */
export function plannedKeys(plan: BatchPlan): Set<string> {
  return new Set([...plan.premiums.keys(), ...plan.refunds.keys()]);
}

/** A posting of `sign` × amount on each key's account (one per account, the keys' amounts summed), and the amounts' sum. */
function accountPostings(amounts: ReadonlyMap<string, number>, sign: 1 | -1, accountOf: (keyId: string) => string): [Posting[], number] {
  const byAccount = new Map<string, number>();
  let sum = 0;
  for (const [keyId, amount] of amounts) {
    const account = accountLedger(accountOf(keyId));
    byAccount.set(account, (byAccount.get(account) ?? 0) + amount);
    sum += amount;
  }
  const postings: Posting[] = [];
  for (const [account, amount] of byAccount) postings.push({ account, amount: sign * amount });
  return [postings, sum];
}

/** The endpoints whose oldest unsettled outcome (`head`) was received at or before `boundary`, oldest head first. */
export function pendingOrder(heads: readonly { id: string; head: number | null | undefined }[], boundary: number): string[] {
  return heads
    .filter((h): h is { id: string; head: number } => h.head !== null && h.head !== undefined && h.head <= boundary)
    .sort((a, b) => a.head - b.head || (a.id < b.id ? -1 : 1))
    .map((h) => h.id);
}

/**
 * The decisions of one group commit (`settleGroup`), whichever store commits its batches:
 *
 *     const run = new GroupRun(next, budget);
 *     for (let step = run.step(); step !== null; step = run.step()) {
 *       if (step === 'round') run.startRound(pendingEndpoints(boundary));
 *       else run.committed(commit(step.endpointId, step.cap));
 *     }
 *     return run.made;
 */
export class GroupRun {
  /** The batches committed so far, in order. */
  readonly made: BatchView[] = [];
  private calls = 0;
  private previous: boolean | null = null;

  constructor(
    private readonly next: NextBatch,
    private readonly budgetCalls: number,
  ) {}

  /** The batch to commit next, `'round'` to be handed the endpoints pending now, or null: the group ends. */
  step(): { endpointId: string; cap: number } | 'round' | null {
    return this.calls < this.budgetCalls ? this.next.next(this.previous) : null;
  }

  startRound(pending: readonly string[]): void {
    this.next.startRound(pending);
    this.previous = null;
  }

  /** The batch `step` named was committed (null: it had no calls). */
  committed(batch: BatchView | null): void {
    this.previous = batch !== null;
    if (batch !== null) {
      this.made.push(batch);
      this.calls += batch.calls;
    }
  }
}
