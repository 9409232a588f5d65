/**
 * `POST /_admin/v1/pool/pause` and `/_admin/v1/pool/resume`: an operator pauses or resumes the
 * coverage of calls (docs/money.md, "Pool capital", "Pause"). Scope `money`, but never two-person:
 * a pause must hold at once. Each change writes the `meta` row (`../pool-pause.ts`), its audit row
 * (`pool.pause` / `pool.resume`, with the note and what it was) and a public changelog notice in
 * one transaction. Asking for what already holds writes nothing and answers `changed: false`.
 */
import type { PoolPauseRequest, PoolPauseView } from '../../protocol/settlement';
import type { ControlContext } from '../context';
import { POOL_PAUSED_META, manualPause } from '../pool-pause';
import type { Actor } from '../store';
import { AlreadyDone, mutateUnlessDone } from '../mutation';

/** The changelog text of a pause or resume. */
export const poolPauseText = (paused: boolean, note: string): string => `Coverage ${paused ? 'paused' : 'resumed'}: ${note}`;

/** Pause (`paused` true) or resume coverage, unless it already is so. */
export async function setPoolPause(ctx: ControlContext, by: Actor, paused: boolean, input: PoolPauseRequest): Promise<PoolPauseView> {
  const { note } = input;
  const answer = (changed: boolean, at: number): PoolPauseView => ({ paused, changed, note, at: new Date(at).toISOString() });
  if ((await manualPause(ctx.store)).paused === paused) return answer(false, ctx.now());
  const now = ctx.now();
  const made = await mutateUnlessDone(
    ctx.store,
    { ...by, now },
    { action: paused ? 'pool.pause' : 'pool.resume', target: 'pool', detail: { note, was: paused ? 'covered' : 'paused' } },
    async (tx) => {
      // Paused or resumed meanwhile, through this control or another on the database.
      if ((await manualPause(tx)).paused === paused) throw new AlreadyDone();
      await tx.setMeta(POOL_PAUSED_META, paused ? 1 : 0);
      await tx.changelog.add({ at: now, kind: 'notice', text: poolPauseText(paused, note), author: by.actor });
    },
  );
  if (made !== null) await ctx.coverageChanged?.();
  return answer(made !== null, now);
}
