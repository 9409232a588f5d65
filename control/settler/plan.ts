/**
 * The money of one settlement batch (docs/design.md §6), decided call by call in settlement order.
 * Pure: given the calls, the endpoint's economics, the pool balance and the hourly refund
 * tally, it returns what each call moves; `store/settlement.ts` commits it.
 *
 * | call | moves |
 * |---|---|
 * | keyed `ok` | premium: key → pool; fee `floor(premium × bps / 10000)`: pool → treasury |
 * | keyed `ok`, prepaid | the premium it reserved at admission (the endpoint's then), the same way |
 * | keyed covered failure | refund owed = price + premium, paid pool → key, clamped |
 * | `client_error` | nothing |
 * | keyless (gate off) | nothing: settled with premium 0, refund 0, refund owed 0 |
 * | admitted uncovered (`X-Svc-Coverage: none`) | nothing, the same way (an exception to the batch's standard amounts) |
 *
 * Clamping: a refund is at most
 *
 * - what the pool holds at that point of the batch (premiums of earlier calls in the batch
 *   included): `pool_depleted`;
 * - what is left of the endpoint's `refund_cap_per_hour` in the clock hour (UTC) in which the
 *   call started: `cap_clamped`;
 * - what is left of its `refund_cap_per_batch` after the refunds of earlier calls in the batch:
 *   `batch_capped`;
 * - its `refund_cap_per_call`: `call_capped`.
 *
 * A cap of 0 is no cap. A call paid short is marked with the binding (smallest) limit; when
 * several are equally small, the first in the list above marks it (the pool wins ties). The
 * shortfall stays on the call (`refund_owed - refund`), and the call counts as clamped whatever
 * bound it.
 */
import { COVERED_FAILURES } from '../../protocol/outcome';
import type { Clamp } from '../../protocol/settlement';
import { HOUR_MS, type BatchPlan, type CallAmounts, type PlanInput } from '../store/settlement';

/** What an uncovered call settles with. */
const UNCOVERED: CallAmounts = Object.freeze({ premium: 0, refund: 0, refund_owed: 0, clamp: null });

const add = (map: Map<string, number>, key: string, amount: number): void => {
  map.set(key, (map.get(key) ?? 0) + amount);
};

export function planBatch(input: PlanInput): BatchPlan {
  const { price, premium, refund_cap_per_hour: cap, treasury_fee_bps: bps } = input.economics;
  const callCap = input.economics.refund_cap_per_call === 0 ? Infinity : input.economics.refund_cap_per_call;
  const batchCap = input.economics.refund_cap_per_batch === 0 ? Infinity : input.economics.refund_cap_per_batch;
  const owed = price + premium;
  const fee = Math.floor((premium * bps) / 10_000);
  const plan: BatchPlan = {
    standard: { premium, owed },
    exceptions: new Map<string, CallAmounts>(),
    premiums: new Map(),
    refunds: new Map(),
    treasuryFees: 0,
    refundsByHour: new Map(),
    totals: { premiums: 0, refunds: 0, refunds_owed: 0, clamped_calls: 0 },
  };
  let pool = input.pool;
  const usedInHour = new Map<number, number>();

  for (const call of input.calls) {
    if (call.key_id === null) continue;
    if (call.uncovered === 1) {
      // Its standard amounts would charge a premium or pay a refund: it moves nothing instead.
      if (call.outcome === 'ok' ? (call.reserved ?? premium) > 0 : COVERED_FAILURES.has(call.outcome) && owed > 0)
        plan.exceptions.set(call.call_id, UNCOVERED);
      continue;
    }
    if (call.outcome === 'ok') {
      // A prepaid call pays what it reserved, which may not be the endpoint's premium now.
      const charged = call.reserved ?? premium;
      if (charged === 0) continue;
      const charge = charged === premium ? fee : Math.floor((charged * bps) / 10_000);
      if (charged !== premium) plan.exceptions.set(call.call_id, { premium: charged, refund: 0, refund_owed: 0, clamp: null });
      add(plan.premiums, call.key_id, charged);
      plan.totals.premiums += charged;
      plan.treasuryFees += charge;
      pool += charged - charge;
      continue;
    }
    if (!COVERED_FAILURES.has(call.outcome) || owed === 0) continue;

    const hour = Math.floor(call.started_at / HOUR_MS);
    const used = usedInHour.get(hour) ?? input.refundedInHour(hour);
    const capLeft = cap === 0 ? Infinity : Math.max(0, cap - used);
    const batchLeft = batchCap - plan.totals.refunds;
    const refund = Math.min(owed, pool, capLeft, batchLeft, callCap);
    plan.totals.refunds_owed += owed;
    if (refund < owed) {
      const clamp: Clamp =
        refund === pool ? 'pool_depleted' : refund === capLeft ? 'cap_clamped' : refund === batchLeft ? 'batch_capped' : 'call_capped';
      plan.exceptions.set(call.call_id, { premium: 0, refund, refund_owed: owed, clamp });
      plan.totals.clamped_calls++;
    }
    if (refund > 0) {
      add(plan.refunds, call.key_id, refund);
      plan.totals.refunds += refund;
      plan.refundsByHour.set(hour, (plan.refundsByHour.get(hour) ?? 0) + refund);
      pool -= refund;
    }
    usedInHour.set(hour, used + refund);
  }
  return plan;
}
