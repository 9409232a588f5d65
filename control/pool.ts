/**
 * The pool's capital as every part of control reads it (docs/money.md, "Pool capital"): the
 * admin API and `svcctl`, the withdrawal loop, and the public reads (`/api/stats`,
 * `/api/v1/status`, the status and activity pages), which see providers as a count only.
 */
import type { PoolCapitalView, PublicPool } from '../protocol/lps';
import type { ControlContext } from './context';
import { capitalView, type PoolCapital } from './store/lps';
import type { StoreTables } from './store';

/** The pool's capital now, as the admin API and `/api/stats` show it. */
export async function poolCapital(
  ctx: ControlContext,
  tables: StoreTables = ctx.store,
): Promise<{ figures: PoolCapital; view: PoolCapitalView }> {
  const rules = { lockRatio: ctx.config.pool.lockRatio, noticeH: ctx.config.pool.withdrawalNoticeH };
  const figures = await tables.lps.capital(rules.lockRatio, ctx.now());
  return { figures, view: capitalView(figures, rules) };
}

/** The pool's capital as the public sees it (`PublicPool`): no provider's name. */
export async function publicPool(ctx: ControlContext): Promise<PublicPool> {
  const { view } = await poolCapital(ctx);
  return {
    capital: view.capital,
    locked: view.locked,
    free: view.free,
    exposure: view.exposure,
    value_per_share: view.value_per_share,
    providers: view.providers,
    pending_withdrawals: view.pending_withdrawals,
  };
}
