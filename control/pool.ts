/**
 * The pool's capital as every part of control reads it (docs/money.md, "Pool capital"): the
 * admin API and `svcctl`, the withdrawal loop, and the public reads (`/api/stats`,
 * `/api/v1/status`, the status and activity pages), which see providers as a count only; and
 * whether it covers new calls (coverage.ts evaluates it each second for the gateways).
 */
import type { PoolCapitalView, PoolCoverage, PublicPool } from '../protocol/lps';
import type { ControlContext } from './context';
import { capitalView, type PoolCapital } from './store/lps';
import type { StoreTables } from './store';
import type { EndpointRow } from './store/endpoints';
import { manualPause } from './pool-pause';

/** The automatic pause ends once free capital is back to this many times `min_free`. */
export const RESUME_FACTOR = 2;

/** `meta` row holding whether the automatic pause was last recorded as on (1). */
export const POOL_AUTO_PAUSED_META = 'pool_auto_paused';

/** Coverage as control evaluated it (protocol/lps.ts `PoolCoverage`). */
export type Coverage = PoolCoverage;

/**
 * The most one covered call of the live endpoints could be refunded: its price + premium, at
 * most the endpoint's per-call cap. 0 without priced endpoints.
 */
export function largestCoveredCall(
  endpoints: readonly Pick<EndpointRow, 'price' | 'premium' | 'refund_cap_per_call' | 'removed_at'>[],
): number {
  let largest = 0;
  for (const e of endpoints) {
    if (e.removed_at !== null) continue;
    const owed = e.price + e.premium;
    largest = Math.max(largest, e.refund_cap_per_call > 0 ? Math.min(owed, e.refund_cap_per_call) : owed);
  }
  return largest;
}

/** Coverage now, with the pool's capital it was judged on. */
export async function coverageNow(
  ctx: ControlContext,
  tables: StoreTables = ctx.store,
): Promise<{ coverage: Coverage; pool: PoolCapitalView }> {
  const [{ view }, manual, endpoints, wasAutomatic] = await Promise.all([
    poolCapital(ctx, tables),
    manualPause(tables),
    tables.endpoints.list(),
    tables.meta(POOL_AUTO_PAUSED_META),
  ]);
  const largest = largestCoveredCall(endpoints);
  const minFree = ctx.config.pool.minFree ?? largest;
  // Once paused by itself, it resumes at twice the minimum, so that it does not flap at the edge.
  const automatic = view.free < (wasAutomatic === 1 ? RESUME_FACTOR : 1) * minFree;
  return {
    coverage: {
      manual: manual.paused,
      automatic,
      paused: manual.paused || automatic,
      free: view.free,
      min_free: minFree,
      largest_call: largest,
    },
    pool: view,
  };
}

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
  const { coverage, pool: view } = await coverageNow(ctx);
  return {
    capital: view.capital,
    locked: view.locked,
    free: view.free,
    exposure: view.exposure,
    value_per_share: view.value_per_share,
    providers: view.providers,
    pending_withdrawals: view.pending_withdrawals,
    paused: coverage.paused,
  };
}
