/**
 * The one place an action that moves or promises money decides whether it acts now or waits
 * for a second operator: funding the pool, marking a payout paid, rotating the receipt signing
 * key. Each of those routes validates its request, then hands its change to {@link moneyAction}
 * as a function of who makes it. Today every one acts at once, as the operator who asked
 * (two-person approval, `money.approvals: 2`, is not built yet: it would record a pending
 * request here instead, and run the same function later with `approvedBy` set, so the audit
 * row names both operators). So each `act` reads the clock itself, when it runs.
 */
import type { ControlContext } from '../context';
import type { Actor } from '../store';

/** The actions two operators would have to agree on, by their audit action names. */
export const MONEY_ACTIONS = ['pool.fund', 'payouts.mark_paid', 'receipts.rotate_key'] as const;
export type MoneyAction = (typeof MONEY_ACTIONS)[number];

/** A money action as its route asks for it: what, on what, and the change, made by the `Actor` it is given. */
export interface MoneyRequest<T> {
  action: MoneyAction;
  target: string | null;
  /** What was asked, as a pending request would show it (the validated request body). */
  detail: Record<string, unknown>;
  /** The change itself; its audit row records `by` (the requester and, once approvals exist, the approver). */
  act: (by: Actor) => Promise<T>;
}

/** Run `request` now as `by`; the seam where a second operator's approval would be required. */
export function moneyAction<T>(_ctx: ControlContext, by: Actor, request: MoneyRequest<T>): Promise<T> {
  return request.act(by);
}
