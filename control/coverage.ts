/**
 * Whether the coverage pool covers new calls (docs/money.md, "Pause"). Coverage is paused while
 * an operator has paused it (`svcctl pool pause`, kept in the `meta` row `pool_paused`)
 * or, by itself, while the pool's free capital is below `pool.minFree` (by default the largest
 * single covered call: the most one more failure could cost). Paused, gateways keep forwarding
 * and admit calls uncovered: premium 0, refund 0, `X-Svc-Coverage: none`.
 *
 * Every control evaluates coverage every {@link COVERAGE_CHECK_MS} and hands the result to its
 * sync hub, which tells each gateway whether it covers and how much of the free capital is its
 * share to cover failures with (sync/hub.ts). Each evaluation first takes this process's count
 * of committed outcome batches (ingest-seq.ts), before it reads anything, and hands it over
 * with the result: the batches it numbers are reflected in that result, so a gateway may stop
 * counting their failures against its allowance once it has the line. The automatic pause is recorded when it starts and
 * when it ends, once across the controls of a shared database (a `meta` row compared and set in
 * the transaction that records it): audited `pool.auto_pause` / `pool.auto_resume`, actor
 * `coverage`, and published as a changelog notice (the status page's feed).
 */
import type { ControlContext } from './context';
import { AlreadyDone, mutateUnlessDone } from './mutation';
import { startPeriodic, type PeriodicLoop } from './periodic';
import { coverageNow, POOL_AUTO_PAUSED_META, type Coverage } from './pool';
import type { IngestCounter, IngestMark } from './ingest-seq';

/** How often every control evaluates coverage. @default 1_000 */
export const COVERAGE_CHECK_MS = 1_000;

/**
 * Evaluate coverage and, when the automatic pause has started or ended since it was last
 * recorded, record that (once: the `meta` row is read again under the writer lock).
 */
export async function checkCoverage(ctx: ControlContext): Promise<Coverage> {
  const { coverage } = await coverageNow(ctx);
  if (((await ctx.store.meta(POOL_AUTO_PAUSED_META)) ?? 0) === (coverage.automatic ? 1 : 0)) return coverage;
  const now = ctx.now();
  const paused = coverage.automatic;
  const detail = { free: coverage.free, min_free: coverage.min_free };
  await mutateUnlessDone(
    ctx.store,
    { actor: 'coverage', now },
    { action: paused ? 'pool.auto_pause' : 'pool.auto_resume', target: 'pool', detail },
    async (tx) => {
      if (((await tx.meta(POOL_AUTO_PAUSED_META)) ?? 0) === (paused ? 1 : 0)) throw new AlreadyDone();
      await tx.setMeta(POOL_AUTO_PAUSED_META, paused ? 1 : 0);
      const text = paused
        ? `Coverage paused automatically: the pool's free capital (${coverage.free}) is below its minimum (${coverage.min_free}); calls are admitted uncovered until it is back.`
        : `Coverage resumed automatically: the pool's free capital (${coverage.free}) is back to at least twice its minimum (${coverage.min_free}).`;
      await tx.changelog.add({ at: now, kind: 'notice', text, author: 'coverage' });
    },
  );
  return coverage;
}

/**
 * The coverage loop of one control: an evaluation now, then one every `intervalMs`, each handed
 * to `publish` with what `ingest` counted before the evaluation read anything.
 */
export type CoverageLoop = PeriodicLoop<Coverage>;

export function startCoverage(
  ctx: ControlContext,
  ingest: IngestCounter,
  publish: (c: Coverage, seen: IngestMark) => void,
  intervalMs = COVERAGE_CHECK_MS,
): CoverageLoop {
  return startPeriodic(
    ctx,
    'coverage',
    async () => {
      // Before the reads: every batch counted by now is committed, so the reads below see it.
      const seen = ingest.mark();
      const coverage = await checkCoverage(ctx);
      publish(coverage, seen);
      return coverage;
    },
    intervalMs,
  );
}
