/**
 * `/_admin/v1/settler`: status, pause, resume, run-once. Pause and resume are audited and
 * kept across restarts; run-once is audited with what it settled. While the settler is halted
 * (a settled batch has no receipt) resume and run-once answer 409 `svc_settler_halted`.
 */
import { SvcError } from '../../protocol/errors';
import { sendJson } from '../../runtime/http';
import type { RunOnceView, SettlerStatus } from '../../protocol/settlement';
import { settlerHaltOf, type ControlContext, type SettlerControls } from '../context';
import type { Router } from '../http/router';

async function refusedWhileHalted<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const halt = settlerHaltOf(err);
    if (halt !== null) throw new SvcError('svc_settler_halted', (err as Error).message, { extra: { batch: halt.batch } });
    throw err;
  }
}

export function registerSettlerRoutes(router: Router, ctx: ControlContext, settler: SettlerControls): void {
  router.get('/_admin/v1/settler', async ({ res }) => sendJson(res, 200, (await settler.status()) satisfies SettlerStatus));

  router.post('/_admin/v1/settler/pause', async ({ req, res, actor, tokenId }) => {
    req.resume();
    sendJson(res, 200, (await settler.pause({ actor, tokenId })) satisfies SettlerStatus);
  });

  router.post('/_admin/v1/settler/resume', async ({ req, res, actor, tokenId }) => {
    req.resume();
    sendJson(res, 200, (await refusedWhileHalted(() => settler.resume({ actor, tokenId }))) satisfies SettlerStatus);
  });

  router.post('/_admin/v1/settler/run-once', async ({ req, res, actor, tokenId }) => {
    req.resume();
    const run = await refusedWhileHalted(() => settler.runOnce());
    await ctx.store.mutate(
      { actor, tokenId, now: ctx.now() },
      {
        action: 'settler.run_once',
        detail: { batches: run.batches.length, calls: run.calls, refunds: run.refunds, premiums: run.premiums },
      },
      () => undefined,
    );
    sendJson(res, 200, run satisfies RunOnceView);
  });
}
