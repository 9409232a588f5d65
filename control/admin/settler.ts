/**
 * `/_admin/v1/settler`: status, pause, resume, run-once. Pause and resume are audited and
 * kept across restarts; run-once is audited with what it settled.
 */
import { sendJson } from '../../protocol/http';
import type { RunOnceView, SettlerStatus } from '../../protocol/settlement';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import type { Settler } from '../settler/settler';

export function registerSettlerRoutes(router: Router, ctx: ControlContext, settler: Settler): void {
  router.get('/_admin/v1/settler', async ({ res }) => sendJson(res, 200, (await settler.status()) satisfies SettlerStatus));

  router.post('/_admin/v1/settler/pause', async ({ req, res, actor }) => {
    req.resume();
    sendJson(res, 200, (await settler.pause(actor)) satisfies SettlerStatus);
  });

  router.post('/_admin/v1/settler/resume', async ({ req, res, actor }) => {
    req.resume();
    sendJson(res, 200, (await settler.resume(actor)) satisfies SettlerStatus);
  });

  router.post('/_admin/v1/settler/run-once', async ({ req, res, actor }) => {
    req.resume();
    const run = await settler.runOnce();
    await ctx.store.mutate(
      { actor, now: ctx.now() },
      {
        action: 'settler.run_once',
        detail: { batches: run.batches.length, calls: run.calls, refunds: run.refunds, premiums: run.premiums },
      },
      () => undefined,
    );
    sendJson(res, 200, run satisfies RunOnceView);
  });
}
