/**
 * Whether the coverage pool covers new calls (docs/money.md, "Pause"). Coverage is paused while
 * an operator has paused it (`svcctl pool pause`, kept in the `meta` row {@link POOL_PAUSED_META})
 * or, by itself, while the pool's free capital is below `pool.minFree` (by default the largest
 * single covered call: the most one more failure could cost). Paused, gateways keep forwarding
 * and admit calls uncovered: premium 0, refund 0, `X-Svc-Coverage: none`.
 *
 * Every control evaluates coverage every {@link COVERAGE_CHECK_MS} and hands the result to its
 * sync hub, which tells each gateway whether it covers and how much of the free capital is its
 * share to cover failures with (sync/hub.ts). The automatic pause is recorded when it starts and
 * when it ends, once across the controls of a shared database (a `meta` row compared and set in
 * the transaction that records it): audited `pool.auto_pause` / `pool.auto_resume`, actor
 * `coverage`, and published as a changelog notice (the status page's feed).
 */
import type { PoolCapitalView } from '../protocol/lps';
import type { ControlContext } from './context';
import { startPeriodic, type PeriodicLoop } from './periodic';
import { poolCapital } from './pool';
import { AlreadyDone, mutateUnlessDone } from './mutation';
import type { StoreTables } from './store';
import type { EndpointRow } from './store/endpoints';

/** `meta` row holding the operator's pause of coverage (1) across restarts. */
export const POOL_PAUSED_META = 'pool_paused';
/** `meta` row holding whether the automatic pause was last recorded as on (1). */
export const POOL_AUTO_PAUSED_META = 'pool_auto_paused';
/** How often every control evaluates coverage. @default 1_000 */
export const COVERAGE_CHECK_MS = 1_000;

/** Coverage as control evaluated it. */
export interface Coverage {
  /** Paused by an operator. */
  manual: boolean;
  /** Paused by itself: free capital is below `min_free`. */
  automatic: boolean;
  /** Either: new calls are admitted uncovered. */
  paused: boolean;
  /** The pool's free capital (capital less locked), micro-units. */
  free: number;
  /** `pool.minFree`, or the largest single covered call. */
  min_free: number;
  /** The largest single covered call (`largestCoveredCall`): the free capital is divided among gateways in these. */
  largest_call: number;
}

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
  const [{ view }, manual, endpoints] = await Promise.all([
    poolCapital(ctx, tables),
    tables.meta(POOL_PAUSED_META),
    tables.endpoints.list(),
  ]);
  const largest = largestCoveredCall(endpoints);
  const minFree = ctx.config.pool.minFree ?? largest;
  const automatic = view.free < minFree;
  return {
    coverage: {
      manual: manual === 1,
      automatic,
      paused: manual === 1 || automatic,
      free: view.free,
      min_free: minFree,
      largest_call: largest,
    },
    pool: view,
  };
}

/** Whether the automatic pause was last recorded as on; never recorded (a new install): off. */
async function autoPaused(tables: Pick<StoreTables, 'meta'>): Promise<boolean> {
  return (await tables.meta(POOL_AUTO_PAUSED_META)) === 1;
}

/**
 * Evaluate coverage and, when the automatic pause has started or ended since it was last
 * recorded, record that (once: the `meta` row is read again under the writer lock).
 */
export async function checkCoverage(ctx: ControlContext): Promise<Coverage> {
  const { coverage } = await coverageNow(ctx);
  if ((await autoPaused(ctx.store)) === coverage.automatic) return coverage;
  const now = ctx.now();
  const paused = coverage.automatic;
  const detail = { free: coverage.free, min_free: coverage.min_free };
  await mutateUnlessDone(
    ctx.store,
    { actor: 'coverage', now },
    { action: paused ? 'pool.auto_pause' : 'pool.auto_resume', target: 'pool', detail },
    async (tx) => {
      if ((await autoPaused(tx)) === paused) throw new AlreadyDone();
      await tx.setMeta(POOL_AUTO_PAUSED_META, paused ? 1 : 0);
      const text = paused
        ? `Coverage paused automatically: the pool's free capital (${coverage.free}) is below its minimum (${coverage.min_free}); calls are admitted uncovered until it is back.`
        : `Coverage resumed automatically: the pool's free capital (${coverage.free}) is back above its minimum (${coverage.min_free}).`;
      await tx.changelog.add({ at: now, kind: 'notice', text, author: 'coverage' });
    },
  );
  return coverage;
}

/** The coverage loop of one control: an evaluation now, then one every `intervalMs`, each handed to `publish`. */
export type CoverageLoop = PeriodicLoop<Coverage>;

export function startCoverage(ctx: ControlContext, publish: (c: Coverage) => void, intervalMs = COVERAGE_CHECK_MS): CoverageLoop {
  return startPeriodic(
    ctx,
    'coverage',
    async () => {
      const coverage = await checkCoverage(ctx);
      publish(coverage);
      return coverage;
    },
    intervalMs,
  );
}
