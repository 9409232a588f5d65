/**
 * Refills (docs/money.md, "Refills"). An account's refill rule brings its available balance up
 * to an amount once a period: every UTC day, or every month on a day of the operator's choice.
 * Every control looks for accounts due one every {@link REFILL_CHECK_MS} (and once when it
 * starts), and an account's refill is made at once when its rule is set; whichever control
 * gets there first makes a period's refill, the others find it made. Once per period is the
 * store's: `account_refills` has one row per account and period, written in the same
 * transaction as the refill's transfer, under the store's writer lock (`AccountsTable.refill`).
 * So a restart, a moved clock or several controls never refill a period twice, and a control
 * that was down refills the current period when it is back (not the periods it missed).
 */
import { AlreadyDone, mutateUnlessDone } from '../mutation';
import { startPeriodic, type PeriodicLoop } from '../periodic';
import type { ControlContext } from '../context';
import type { Audit } from '../store/changes';
import { refillPeriod, type Refill } from '../store/accounts';

/** How often a control looks for accounts due a refill. @default 60_000 */
export const REFILL_CHECK_MS = 60_000;
/** Accounts with a rule read per step of a pass. @default 500 */
export const REFILL_PAGE = 500;

/** The current period's refill of an account and, when this call made it, the state version that recorded it. */
export interface Refilled {
  refill: Refill;
  version: number | null;
}

/**
 * Account `id`'s refill for the period now falls in: made now (audited `accounts.refilled`, under
 * the name of the operator who set the rule), or the one made before in the period. Null when
 * the account has no refill rule.
 */
export async function refillAccount(ctx: ControlContext, id: string): Promise<Refilled | null> {
  const account = await ctx.store.accounts.byId(id);
  if (account?.refill_every == null) return null;
  const at = ctx.now();
  let found = null as Refill | null;
  const detail: Record<string, unknown> = { control_id: ctx.controlId };
  const audit: Audit = { action: 'accounts.refilled', target: id, detail };
  const made = await mutateUnlessDone(ctx.store, { actor: account.refill_by ?? 'refill', now: at }, audit, async (tx) => {
    found = await tx.accounts.refill(id, at);
    // Made before (or the rule is gone): no audit row, no state version.
    if (found === null || !found.created) throw new AlreadyDone();
    Object.assign(detail, { period: found.period, target: found.target, amount: found.amount, transfer_id: found.transfer_id });
    // Money moved: gateways that found the account short ask again (`accounts_funded`).
    if (found.amount > 0) audit.changes = [{ kind: 'account', entity: id }];
    return found;
  });
  if (made !== null) return { refill: made.result, version: made.version };
  return found === null ? null : { refill: found, version: null };
}

/**
 * One pass over every account with a refill rule: each whose current period has no refill yet
 * is refilled. Answers the refills it made. An account whose refill fails is logged and tried
 * again on the next pass; the others go on.
 */
export async function refillDue(ctx: ControlContext): Promise<Refill[]> {
  const made: Refill[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await ctx.store.accounts.withRefill(after, REFILL_PAGE);
    for (const account of page) {
      if (account.refill_every === null) continue;
      const { period } = refillPeriod({ every: account.refill_every, day: account.refill_day }, ctx.now());
      if ((await ctx.store.accounts.refillOf(account.id, period)) !== undefined) continue;
      try {
        const refilled = await refillAccount(ctx, account.id);
        if (refilled?.version != null) made.push(refilled.refill);
      } catch (err) {
        ctx.log.warn('refill failed', { account_id: account.id, period, err });
      }
    }
    if (page.length < REFILL_PAGE) return made;
    after = page[page.length - 1]!.id;
  }
}

/** The refill loop of one control: a pass now, then one every `intervalMs`, until stopped. */
export type RefillLoop = PeriodicLoop<Refill[]>;

export function startRefills(ctx: ControlContext, intervalMs = REFILL_CHECK_MS): RefillLoop {
  return startPeriodic(ctx, 'refill', () => refillDue(ctx), intervalMs);
}
