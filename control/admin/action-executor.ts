/**
 * What a two-person action is to money-actions.ts, which decides whether it acts now or waits
 * for a second operator: the executor each action gives it (the money ones there, the
 * operators' two in operator-actions.ts).
 */
import type { z } from 'zod';
import type { MONEY_ACTION_REQUESTS, MoneyAction } from '../../protocol/approvals';
import type { ControlContext } from '../context';
import type { Actor, StoreTables } from '../store';

/** Runs first inside the action's transaction: an approval's claim on its request, or nothing. */
export type Within = (tx: StoreTables) => Promise<void>;

export type Input<A extends MoneyAction> = z.infer<(typeof MONEY_ACTION_REQUESTS)[A]>;

/** One two-person action: what it acts on, and the change itself with its answer. */
export interface Executor<A extends MoneyAction, V> {
  /** The status of the answer when it acts (201 for a transfer or an operator added, 200 for a rotation or a wallet). */
  status: number;
  /** The status of a given answer, when it depends on it (a deposit replayed is 200); default `status`. */
  statusOf?(answer: V): number;
  target: (input: Input<A>) => string | null;
  /** Whether this request, asked by `by`, needs a second operator under `money.approvals: 2` (default: always). */
  twoPerson?: (input: Input<A>, by: Actor) => boolean;
  run: (ctx: ControlContext, input: Input<A>, by: Actor, within: Within) => Promise<V>;
}
