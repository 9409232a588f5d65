/**
 * `/_admin/v1/receipts/…`:
 *
 * - `rotate-key` (`svcctl receipts rotate-key`): a new receipt signing key in the data dir, its
 *   public half published with an audit row; receipts from the next batch on carry the new
 *   `kid`, and every earlier key stays in `/api/receipts/keys` so old receipts keep verifying.
 *   The private key appears in no answer, log or audit row.
 * - `{batch}/reissue` (`svcctl receipts reissue BATCH`): the operator's knowing way out of a
 *   halted settler when no backup is restored. The settled batch without a receipt is signed
 *   again from its rows as they are now, in one transaction with an audit row and a public
 *   changelog entry, so a re-signing is never silent; then the settler looks again and lifts
 *   its halt when no other batch lacks its receipt. 404 `svc_not_found` for a batch that does
 *   not exist, 409 `svc_conflict` for one that has its receipt or comes after one that lacks it.
 */
import { SvcError } from '../../protocol/errors';
import { sendJson } from '../../runtime/http';
import type { ReissueView } from '../../protocol/receipts';
import type { ControlContext, SettlerControls } from '../context';
import type { Router } from '../http/router';
import type { StoreTables } from '../store';
import { ReissueError } from '../store/receipts';
import { moneyAction } from './money-actions';

function batchParam(raw: string): number {
  const batch = /^\d{1,15}$/.test(raw) ? Number(raw) : 0;
  if (batch < 1) {
    throw new SvcError('svc_bad_request', 'batch must be a batch number (an integer ≥ 1)', {
      extra: { errors: [{ field: 'batch', message: 'must be a whole number ≥ 1' }] },
    });
  }
  return batch;
}

async function reissueConflict<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ReissueError) throw new SvcError(err.reason === 'no_batch' ? 'svc_not_found' : 'svc_conflict', err.message);
    throw err;
  }
}

export function registerReceiptAdminRoutes(router: Router, ctx: ControlContext, settler: SettlerControls): void {
  router.post('/_admin/v1/receipts/rotate-key', async ({ req, res, actor, tokenId }) => {
    req.resume();
    const { status, body } = await moneyAction(ctx, { actor, tokenId }, 'receipts.rotate_key', {});
    sendJson(res, status, body);
  });

  router.post('/_admin/v1/receipts/:batch/reissue', async ({ req, res, params, actor, tokenId }) => {
    req.resume();
    const batch = batchParam(params.batch ?? '');
    const now = ctx.now();
    const kid = await ctx.store.receipts.currentKid();
    const reissue = async (tx: StoreTables) => {
      const receipt = await tx.receipts.reissue(batch);
      const text =
        `Settlement batch ${batch} had no receipt in the database; the operators signed it again with key ${receipt.kid}. ` +
        `A receipt of batch ${batch} saved before this may differ from the one published now (/api/receipts/${batch}).`;
      return { receipt, changelogId: await tx.changelog.add({ at: now, kind: 'notice', text, author: actor }) };
    };
    const { result } = await reissueConflict(() =>
      ctx.store.mutate({ actor, tokenId, now }, { action: 'receipts.reissue', target: String(batch), detail: { kid } }, reissue),
    );
    const body: ReissueView = { receipt: result.receipt, changelog_id: result.changelogId, halted: await settler.checkReceipts() };
    sendJson(res, 200, body);
  });
}
