/**
 * Prepaid budgets (docs/design.md §6, "Prepaid admission"): how a gateway holds a part of each
 * account's money and spends it without asking control per call.
 *
 * Control grants each gateway process (an *instance*: one run, a random id chosen at start)
 * budget per account, only from the account's free money (its balance, less the premiums its
 * unsettled calls reserved, less what every open instance holds). The gateway admits a keyed
 * call on a `prepaid` endpoint while its budget for the key's account covers the premium, and
 * writes the premium into the call's record (`reserved`, `instance`). Every counter here is
 * cumulative for one instance and only grows, so a lost, repeated or reordered request or answer
 * never makes a gateway hold more than control granted it:
 *
 *     budget = granted − returned − spent   (the gateway's, in memory)
 *
 * Control counts `spent` itself when it ingests the instance's records, so the money a gateway
 * holds is never counted twice and never lent twice: across any number of gateways an account's
 * admitted premiums never exceed its balance. A new instance starts with nothing; the escrow of
 * the instances before it is released once the new one reports its journal `drained` (every
 * record they wrote is then ingested).
 */
import { z } from 'zod';

export const SYNC_BUDGETS_PATH = '/_sync/v1/budgets';

/** A gateway instance id: one process run (`randomUUID()` at start), sent as `instance`. */
export const InstanceId = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be 1 to 64 of A-Z a-z 0-9 . _ -' });

/** An account id as budgets name it (`acc_…`). */
const AccountId = z.string().min(1).max(64);
const Micro = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Accounts per request or answer. */
export const BUDGET_ACCOUNTS_MAX = 10_000;

/**
 * Body of `POST /_sync/v1/budgets` (sync token). A gateway sends it when a call finds its budget
 * for an account short (`want` with the `need` of the waiting call: premium − budget), ahead of
 * running out (`need` 0), every {@link BUDGET_POLL_MS} while it holds budget (`held`, so control
 * can ask some back), and once its journal is drained after a start (`drained`).
 */
export const BudgetRequest = z.strictObject({
  gateway_id: z.string().min(1).max(64),
  instance: InstanceId,
  /** Accounts it wants budget for, with what the call waiting needs beyond its budget (0: ahead of need). */
  want: z
    .array(z.strictObject({ account: AccountId, need: Micro }))
    .max(BUDGET_ACCOUNTS_MAX)
    .default([]),
  /** Accounts it holds budget for, with what it has given back in all (cumulative, this instance). */
  held: z
    .array(z.strictObject({ account: AccountId, returned: Micro }))
    .max(BUDGET_ACCOUNTS_MAX)
    .default([]),
  /**
   * Every record this gateway's earlier instances journaled is now acknowledged by control: the
   * budget they held is released.
   */
  drained: z.boolean().optional(),
});
export type BudgetRequest = z.infer<typeof BudgetRequest>;

/** One account in control's answer: what the instance was granted in all, and what to give back. */
export const BudgetGrant = z.strictObject({
  account: AccountId,
  /** Granted to this instance in all (cumulative; the gateway keeps the larger of this and what it had). */
  granted: Micro,
  /** Give back up to this much of the budget still unspent (add it to `returned` and report it). */
  ask: Micro,
});
export type BudgetGrant = z.infer<typeof BudgetGrant>;

/** Control's answer to a {@link BudgetRequest}: one grant per account wanted or held. */
export const BudgetAnswer = z.strictObject({ accounts: z.array(BudgetGrant) });
export type BudgetAnswer = z.infer<typeof BudgetAnswer>;

/** How often a gateway holding budget reports and learns what to give back. @default 1000 */
export const BUDGET_POLL_MS = 1_000;
