/**
 * Receipt reads on the indexer ({indexer_url}, docs/design.md §11), behind the listener's IP limit
 * and cached like its other answers:
 *
 * - `GET /api/receipts/keys`: the JWKS of every key that signed receipts, current first;
 * - `GET /api/receipts?after=&limit=`: receipts in ascending batch order, `next_after` to page;
 * - `GET /api/receipts/checkpoint`: the chain's head (newest batch and its receipt's hash), signed
 *   by the current key; 404 `svc_not_found` before the first receipt;
 * - `GET /api/receipts/consistency?from=&to=`: the receipts of batches `from` to `to` (at most
 *   1000), from which a verifier holding an older checkpoint checks the history from batch 1
 *   still leads through it to today's (`protocol/receipts-consistency.ts`, `verifyConsistency`);
 *
 *   both only over a chain control verified (`../receipts/chain-guard.ts`: each new receipt's
 *   signature and link once, each served receipt against the hash verified for its batch), else
 *   503 `svc_receipts_unverified`, and the settler halts;
 * - `GET /api/receipts/<batch>`: one receipt;
 * - `GET /api/calls/<call_id>/proof`: a call's leaf, its RFC 9162 inclusion proof and its
 *   batch's receipt; 404 `svc_not_found` for a call never recorded, 409 `svc_not_settled`
 *   for one not settled yet.
 *
 * A receipt never changes once written, so cache keys name what an answer depends on: a page
 * the newest batch (a new receipt is a new key), the JWKS the current kid (a rotation is a
 * new key). Problems are never cached.
 */
import { SvcError } from '../../protocol/errors';
import {
  BATCH_NUMBER_TEXT,
  type CallProof,
  type Checkpoint,
  type ConsistencyAnswer,
  type ReceiptJwks,
  type ReceiptsPage,
} from '../../protocol/receipts';
import { CONSISTENCY_MAX_RECEIPTS } from '../../protocol/receipts-consistency';
import type { ControlContext } from '../context';
import type { ReceiptChainGuard } from '../receipts/chain-guard';
import type { Router } from '../http/router';
import { ResponseCache, jsonAnswer } from '../http/cache';
import { intParam } from '../http/validate';

/** Receipts per page unless `limit` says otherwise. @default 100 */
export const DEFAULT_RECEIPTS_PAGE = 100;
/** Most receipts per page. @default 1000 */
export const MAX_RECEIPTS_PAGE = 1_000;
/** Longer call ids cannot be the gateway's (UUIDv7, 36 characters): not found, without a lookup. */
const MAX_CALL_ID_LENGTH = 128;

/** A batch number as a path segment or `after`, written as {@link BATCH_NUMBER_TEXT} says. */
function batchNumber(raw: string | null, field: string, fallback: number | null): number | null {
  if (raw === null) return fallback;
  if (!BATCH_NUMBER_TEXT.test(raw)) {
    throw new SvcError('svc_bad_request', `${field} must be a batch number (an integer ≥ ${fallback === null ? 1 : 0}, no leading zeros)`, {
      extra: { errors: [{ field, message: 'must be a whole number without leading zeros' }] },
    });
  }
  return Number(raw);
}

/** 503 `svc_receipts_unverified`: what the chain guard found. */
function unverified(problem: string): SvcError {
  return new SvcError('svc_receipts_unverified', `${problem}; the operators restore the database from a backup`);
}

/** While the chain is broken nothing it vouched for is served, not even from the cache. */
function refuseBroken(chain: ReceiptChainGuard): void {
  const broken = chain.broken;
  if (broken !== null) throw unverified(broken.reason);
}

export function registerReceiptRoutes(router: Router, ctx: ControlContext, headers: Record<string, string>): void {
  const receipts = ctx.store.receipts;
  const chain = ctx.receiptChain;
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statsTtlS, now: ctx.now });

  router.get('/api/receipts/keys', async ({ req, res }) =>
    cache.send(req, res, `jwks:${await receipts.currentKid()}`, async () =>
      jsonAnswer((await receipts.jwks()) satisfies ReceiptJwks, headers),
    ),
  );

  router.get('/api/receipts', { query: ['after', 'limit'] }, async ({ req, res, query }) => {
    const after = batchNumber(query.get('after'), 'after', 0)!;
    const limit = intParam(query, 'limit', DEFAULT_RECEIPTS_PAGE, MAX_RECEIPTS_PAGE);
    const head = (await receipts.head())?.batch ?? 0;
    await cache.send(req, res, `page:${after}:${limit}:${head}`, async () => {
      const page = await receipts.page(after, limit);
      const last = page[page.length - 1];
      const body: ReceiptsPage = { receipts: page, next_after: last !== undefined && last.batch < head ? last.batch : null };
      return jsonAnswer(body, headers);
    });
  });

  // Before `/api/receipts/:batch`: the first route that matches answers.
  router.get('/api/receipts/checkpoint', async ({ req, res }) => {
    refuseBroken(chain);
    const head = (await receipts.head())?.batch ?? 0;
    await cache.send(req, res, `checkpoint:${head}:${await receipts.currentKid()}`, async () => {
      const newest = await receipts.head();
      if (newest === null) throw new SvcError('svc_not_found', 'no settlement batch has a receipt yet: there is no checkpoint');
      // Signed only over a chain verified up to this head, which is still the receipt verified.
      const problem = await chain.vouch([newest]);
      if (problem !== null) throw unverified(problem);
      return jsonAnswer((await receipts.checkpoint(newest)) satisfies Checkpoint, headers);
    });
  });

  router.get('/api/receipts/consistency', { query: ['from', 'to'] }, async ({ req, res, query }) => {
    refuseBroken(chain);
    const from = batchNumber(query.get('from'), 'from', null);
    const to = batchNumber(query.get('to'), 'to', null);
    const missing = from === null ? 'from' : to === null ? 'to' : null;
    if (missing !== null) {
      throw new SvcError('svc_bad_request', `${missing} is required: the batch of a checkpoint`, {
        extra: { errors: [{ field: missing, message: 'is required' }] },
      });
    }
    if (from! < 1 || from! > to!) {
      throw new SvcError('svc_bad_request', 'from must be a batch ≥ 1 and not after to', {
        extra: { errors: [{ field: 'from', message: 'must be ≥ 1 and ≤ to' }] },
      });
    }
    if (to! - from! + 1 > CONSISTENCY_MAX_RECEIPTS) {
      throw new SvcError(
        'svc_bad_request',
        `at most ${CONSISTENCY_MAX_RECEIPTS} receipts per answer: ask from ${from} to ${from! + CONSISTENCY_MAX_RECEIPTS - 1}, then on from there`,
        {
          extra: { errors: [{ field: 'to', message: `must be at most from + ${CONSISTENCY_MAX_RECEIPTS - 1}` }] },
        },
      );
    }
    await cache.send(req, res, `consistency:${from}:${to}`, async () => {
      // A batch without its receipt inside the range shortens the answer; the verifier names it.
      const page = (await receipts.page(from! - 1, to! - from! + 1)).filter((r) => r.batch <= to!);
      if (page[0]?.batch !== from) throw new SvcError('svc_not_found', `no receipt for batch ${from}`);
      if (page[page.length - 1]!.batch !== to && (await receipts.get(to!)) === null) {
        throw new SvcError('svc_not_found', `no receipt for batch ${to}`);
      }
      // Each receipt served is the one verified for its batch: signed, linked, unchanged since.
      const problem = await chain.vouch(page);
      if (problem !== null) throw unverified(problem);
      return jsonAnswer({ receipts: page } satisfies ConsistencyAnswer, headers);
    });
  });

  router.get('/api/receipts/:batch', async ({ req, res, params }) => {
    const batch = batchNumber(params.batch ?? null, 'batch', null)!;
    await cache.send(req, res, `receipt:${batch}`, async () => {
      const receipt = await receipts.get(batch);
      if (receipt === null) throw new SvcError('svc_not_found', `no receipt for batch ${batch}`);
      return jsonAnswer(receipt, headers);
    });
  });

  router.get('/api/calls/:call_id/proof', async ({ req, res, params }) => {
    const callId = params.call_id ?? '';
    if (callId.length === 0 || callId.length > MAX_CALL_ID_LENGTH) throw new SvcError('svc_not_found', 'no call with that id was recorded');
    await cache.send(req, res, `proof:${callId}`, async () => {
      const found = await receipts.proof(callId);
      switch (found.state) {
        case 'unknown':
          throw new SvcError('svc_not_found', 'no call with that id was recorded');
        case 'unsettled':
          throw new SvcError('svc_not_settled', 'the call is recorded but not settled yet; its proof exists once its batch settles');
        case 'unreceipted':
          throw new SvcError('svc_not_settled', `the call is settled in batch ${found.batch}, which has no receipt`);
        case 'settled':
          return jsonAnswer(found.proof satisfies CallProof, headers);
      }
    });
  });
}
