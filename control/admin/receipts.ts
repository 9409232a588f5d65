/**
 * `/_admin/v1/receipts/rotate-key` (`svcctl receipts rotate-key`): a new receipt signing key
 * in the data dir, its public half published with an audit row; receipts from the next batch
 * on carry the new `kid`, and every earlier key stays in `/api/receipts/keys` so old
 * receipts keep verifying. The private key appears in no answer, log or audit row.
 */
import { sendJson } from '../../protocol/http';
import type { RotateKeyView } from '../../protocol/receipts';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';

export function registerReceiptAdminRoutes(router: Router, ctx: ControlContext): void {
  router.post('/_admin/v1/receipts/rotate-key', async ({ req, res, actor }) => {
    req.resume();
    const now = ctx.now();
    const rotation = await ctx.store.receipts.prepareRotation();
    await ctx.store.mutate(
      { actor, now },
      { action: 'receipts.rotate_key', target: rotation.kid, detail: { previous_kid: rotation.previous_kid } },
      (tx) => tx.receipts.publishPrepared(rotation.kid, now),
    );
    await ctx.store.receipts.activatePrepared(rotation.kid);
    const body: RotateKeyView = {
      kid: rotation.kid,
      previous_kid: rotation.previous_kid,
      created_at: new Date(now).toISOString(),
      published: (await ctx.store.receipts.jwks()).keys.map((k) => k.kid),
    };
    sendJson(res, 200, body);
  });
}
