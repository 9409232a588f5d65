/**
 * Paying liquidity providers' withdrawals (docs/money.md, "Pool capital"). A withdrawal is due
 * once its notice (`pool.withdrawalNoticeH`) has passed; every control looks for due ones every
 * {@link WITHDRAWAL_CHECK_MS} (and once when it starts) and pays them, oldest due first, from
 * the pool's free capital (capital less what its exposure locks), each in part when free capital
 * is short (the rest, and the requests behind it, wait for the next pass). A pass is one
 * transaction under the store's writer lock (`LpsTable.payDue`): no settlement, deposit or other
 * control's pass moves the pool meanwhile, so a payment is made once and never from locked
 * capital. Each pass that pays is audited `lps.withdrawals.paid`, actor `withdrawals`.
 *
 * Each pass then samples the pool for the public pages' 90-day chart (`pool_days`: the day's
 * capital, and its highest exposure with the capital locked then).
 */
import type { ControlContext } from '../context';
import type { WithdrawalPayment } from '../store/lps';
import type { Audit } from '../store';
import { AlreadyDone, mutateUnlessDone } from '../mutation';
import { startPeriodic, type PeriodicLoop } from '../periodic';
import { poolCapital } from '../pool';

/** How often a control looks for withdrawals due. @default 60_000 */
export const WITHDRAWAL_CHECK_MS = 60_000;

/** Pay the withdrawals due now; answers the payments made. */
export async function payDueWithdrawals(ctx: ControlContext): Promise<WithdrawalPayment[]> {
  const now = ctx.now();
  const detail: Record<string, unknown> = { control_id: ctx.controlId };
  const audit: Audit = { action: 'lps.withdrawals.paid', target: 'pool', detail };
  const made = await mutateUnlessDone(ctx.store, { actor: 'withdrawals', now }, audit, async (tx) => {
    const payments = await tx.lps.payDue(now, ctx.config.pool.lockRatio, 'withdrawals');
    if (payments.length === 0) throw new AlreadyDone();
    detail.payments = payments.map((p) => ({
      withdrawal_id: p.withdrawal.id,
      provider_id: p.withdrawal.provider_id,
      amount: p.amount,
      shares: p.shares,
      transfer_id: p.transfer_id,
      exposure: p.exposure,
      locked: p.locked,
    }));
    return payments;
  });
  return made?.result ?? [];
}

/** Record the pool's capital and exposure now in today's row (UTC). */
export async function samplePool(ctx: ControlContext): Promise<void> {
  const now = ctx.now();
  const { figures } = await poolCapital(ctx);
  await ctx.store.lps.sampleDay(new Date(now).toISOString().slice(0, 10), figures, now);
}

/** The withdrawal loop of one control: a pass (pay what is due, then sample the pool) now, then one every `intervalMs`. */
export type WithdrawalLoop = PeriodicLoop<WithdrawalPayment[]>;

export function startWithdrawals(ctx: ControlContext, intervalMs = WITHDRAWAL_CHECK_MS): WithdrawalLoop {
  return startPeriodic(
    ctx,
    'withdrawal',
    async () => {
      const paid = await payDueWithdrawals(ctx);
      await samplePool(ctx);
      return paid;
    },
    intervalMs,
  );
}
