/** The indexer ({indexer_url}, docs/design.md §7): the document served at `{indexer_url}/openapi.json`. */
import { z } from 'zod';
import { ActivityItem, ActivityPage, ActivityPageQuery, ActivityQuery, SettledActivityItem, StatsAnswer } from '../indexer';
import { CallProof, Checkpoint, ConsistencyAnswer, Receipt, ReceiptJwk, ReceiptJwks, ReceiptLeaf, ReceiptsPage } from '../receipts';
import type { ErrorCode } from '../errors';
import { HealthAnswer } from '../wire';
import { BATCH_NUMBER_PARAM, EDGE_ERRORS, IF_NONE_MATCH, STORE_ERRORS, cachedAtom, cachedHtml, cachedJson, pathParam } from './common';
import type { JsonObject, Operation } from './operation';
import { faviconRead, openApiRead, publicListenerDocument } from './public-listener';

/** Every request is counted against the per-IP limit first; there is no User-Agent filter. */
const READ_ERRORS: readonly ErrorCode[] = [...EDGE_ERRORS, 'svc_rate_limited'];
/** A read of the database: 503 `svc_store_unavailable` while control cannot reach it. */
const STORE_READ_ERRORS: readonly ErrorCode[] = [...READ_ERRORS, ...STORE_ERRORS];

export const INDEXER_OPERATIONS: readonly Operation[] = [
  {
    method: 'get',
    path: '/health',
    operationId: 'getHealth',
    summary: 'Liveness of the indexer',
    description: 'Exactly `{"status":"ok","version":"v1"}`.',
    tag: 'health',
    security: ['none'],
    answers: [{ status: 200, description: 'The indexer is up', json: { HealthAnswer } }],
    errors: READ_ERRORS,
  },
  openApiRead('the indexer', READ_ERRORS),
  {
    method: 'get',
    path: '/api/stats',
    operationId: 'getStats',
    summary: 'Pool, settlement totals, calls and the last settled calls',
    description:
      'Money comes from the ledger: 0 until the settler has settled something, never estimated. `recent_activity` is the last `public.recentActivity` settled calls (the latest batch first); calls not settled yet are counted in `unsettled_calls` and listed by `/api/activity`.',
    tag: 'indexer',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedJson('The aggregate numbers', { StatsAnswer }),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/api/activity',
    operationId: 'listActivity',
    summary: 'Every recorded call, newest first, settled or not',
    tag: 'indexer',
    security: ['none'],
    query: ActivityQuery,
    params: [IF_NONE_MATCH],
    answers: cachedJson('One page of calls; follow `next_before` for older ones', { ActivityPage }),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/',
    operationId: 'getRoot',
    summary: 'Where a browser goes: the activity page',
    description:
      'For a request whose `Accept` ranks `text/html` above JSON and `*/*` (a browser), 302 to `/activity`; any other request (the SDK, `Accept: application/json`) gets 404 `svc_not_found`. Every error answered to such a browser on this listener is an HTML page with the status and the error code instead of problem+json.',
    tag: 'pages',
    security: ['none'],
    answers: [{ status: 302, description: 'To the activity page', requiredHeaders: ['Location'] }],
    errors: [...READ_ERRORS, 'svc_not_found'],
  },
  {
    method: 'get',
    path: '/changelog.atom',
    operationId: 'getChangelogFeed',
    summary: 'The public changelog as an Atom 1.0 feed, for feed readers',
    description:
      "The public API's `/changelog.atom` with the same entries and entry ids, here without a User-Agent filter so feed readers can fetch it; its links are absolute, to the public API's pages.",
    tag: 'pages',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedAtom('The changelog feed'),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/status.atom',
    operationId: 'getStatusFeed',
    summary: 'The incident history as an Atom 1.0 feed, for feed readers',
    description:
      "The public API's `/status.atom` with the same entries and entry ids, here without a User-Agent filter so feed readers can fetch it; its links are absolute, to the public API's pages.",
    tag: 'pages',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedAtom('The incidents feed'),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/receipts.atom',
    operationId: 'getReceiptsFeed',
    summary: 'Settlement receipts as an Atom 1.0 feed: one entry per batch with its hash',
    description:
      "The latest 50 batches, newest first; each entry names the batch, the hex SHA-256 of its receipt (what the next receipt's `prev` and a checkpoint at that batch hold) and the receipt itself. Feed readers and archives that fetch it keep an independent copy: a batch rewritten later no longer has the hash they saved.",
    tag: 'receipts',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedAtom('The receipts feed'),
    errors: STORE_READ_ERRORS,
  },
  faviconRead(READ_ERRORS),
  {
    method: 'get',
    path: '/activity',
    operationId: 'getActivityPage',
    summary: 'The activity page (HTML, no JavaScript)',
    description:
      'Ledger totals, the latest settlement batches (each linked to its signed receipt), the latest refunds, and every call newest first, paged with `before` like `/api/activity`, filtered by provider and outcome through a GET form; one call looked up by its gateway call id shows its outcome, refund, batch and a link to its proof. Calls show opaque ids only; each settled call links to its batch receipt. An unknown provider or outcome is 400.',
    tag: 'pages',
    security: ['none'],
    query: ActivityPageQuery,
    params: [IF_NONE_MATCH],
    answers: cachedHtml('The activity page'),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/api/receipts/keys',
    operationId: 'getReceiptKeys',
    summary: 'The public keys that signed receipts (JWKS), current first',
    description: 'Ed25519 keys as RFC 8037 OKP JWKs; a rotated key stays published so older receipts keep verifying.',
    tag: 'receipts',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedJson('The JWKS', { ReceiptJwks }),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/api/receipts',
    operationId: 'listReceipts',
    summary: 'Signed settlement receipts in ascending batch order',
    description:
      'Each receipt is signed (Ed25519) over its RFC 8785 canonical JSON without `sig`, carries the RFC 9162 root of its batch, and chains to the previous receipt by `prev`.',
    tag: 'receipts',
    security: ['none'],
    query: z.object({
      after: z.coerce
        .number()
        .int()
        .min(0)
        .optional()
        .describe('receipts of batches after this one (`next_after` of the previous page); default 0'),
      limit: z.coerce.number().int().min(1).max(1000).optional().describe('receipts per page (default 100)'),
    }),
    params: [IF_NONE_MATCH],
    answers: cachedJson('One page of receipts', { ReceiptsPage }),
    errors: STORE_READ_ERRORS,
  },
  {
    method: 'get',
    path: '/api/receipts/checkpoint',
    operationId: 'getReceiptsCheckpoint',
    summary: "The chain's head, signed: the newest batch and its receipt's hash",
    description:
      "`hash` is the hex SHA-256 of the newest receipt's RFC 8785 canonical JSON (`sig` included): the `prev` the next receipt will hold. Signed like the receipts (Ed25519 over the canonical JSON without `sig`, by the key that signs receipts now; `kid` is in `/api/receipts/keys`). Save it: `/api/receipts/consistency` later shows whether the history served then still leads to the one served now. Control signs one only over a chain it verified (every receipt signed, each `prev` the hash of the one before); when the chain in its database does not verify, 503 `svc_receipts_unverified`. 404 `svc_not_found` before the first batch.",
    tag: 'receipts',
    security: ['none'],
    params: [IF_NONE_MATCH],
    answers: cachedJson('The checkpoint', { Checkpoint }),
    errors: [...STORE_READ_ERRORS, 'svc_not_found', 'svc_receipts_unverified'],
  },
  {
    method: 'get',
    path: '/api/receipts/consistency',
    operationId: 'getReceiptsConsistency',
    summary: 'The receipts of a span of batches, to check the history was not rewritten',
    description:
      "The receipts of batches `from` to `to` inclusive, ascending (at most 1000: more, or `from` after `to`, is 400 `svc_bad_request`; a batch without a receipt is 404 `svc_not_found`). A verifier holding a saved checkpoint reads every receipt from batch 1 to the served checkpoint's batch, 1000 at a time, and checks that each `prev` is the hash of the receipt before and each signature verifies, that the receipt of the saved checkpoint's batch still hashes to its `hash`, and that the last hashes to the served checkpoint's. Control serves only receipts it verified (signed, linked to the one before, unchanged since): otherwise 503 `svc_receipts_unverified`.",
    tag: 'receipts',
    security: ['none'],
    query: z.object({
      from: z.coerce.number().int().min(1).describe('the first batch'),
      to: z.coerce.number().int().min(1).describe('the last batch (at most from + 999)'),
    }),
    params: [IF_NONE_MATCH],
    answers: cachedJson('The receipts from `from` to `to`', { ConsistencyAnswer }),
    errors: [...STORE_READ_ERRORS, 'svc_not_found', 'svc_receipts_unverified'],
  },
  {
    method: 'get',
    path: '/api/receipts/{batch}',
    operationId: 'getReceipt',
    summary: 'The receipt of one settlement batch',
    tag: 'receipts',
    security: ['none'],
    params: [pathParam('batch', 'the batch number (from 1), written without leading zeros', BATCH_NUMBER_PARAM), IF_NONE_MATCH],
    answers: cachedJson('The receipt', { Receipt }),
    errors: [...STORE_READ_ERRORS, 'svc_not_found'],
  },
  {
    method: 'get',
    path: '/api/calls/{call_id}/proof',
    operationId: 'getCallProof',
    summary: "A settled call's leaf, its inclusion proof and its batch's receipt",
    description:
      'RFC 9162 §2.1.3 inclusion proof of the leaf in the tree whose root the receipt signs. 409 `svc_not_settled` while the call awaits settlement.',
    tag: 'receipts',
    security: ['none'],
    params: [pathParam('call_id', 'the call id (`X-Svc-Call-Id`)'), IF_NONE_MATCH],
    answers: cachedJson('The proof', { CallProof }),
    errors: [...STORE_READ_ERRORS, 'svc_not_found', 'svc_not_settled'],
  },
];

/** The indexer's OpenAPI document. */
export function indexerDocument(): JsonObject {
  return publicListenerDocument(
    {
      title: 'svc indexer',
      description:
        'Aggregate statistics and call activity of svc ({indexer_url}). Answers are cached with `Cache-Control` and `ETag` (`If-None-Match` → 304); each client IP may make `limits.publicCount` requests per `limits.publicWindowS` (429 with `Retry-After`, `RateLimit`, `RateLimit-Policy`). Amounts are integer micro-units (`amount_decimals`: 6); ids are opaque. ',
      server: { description: '{indexer_url} (default http://127.0.0.1:7072)' },
      tags: [
        { name: 'indexer', description: 'Statistics and activity' },
        { name: 'receipts', description: 'Signed settlement receipts and per-call proofs (docs/design.md §11)' },
        { name: 'pages', description: 'Server-rendered pages' },
      ],
      schemes: [],
      operations: INDEXER_OPERATIONS,
    },
    { ActivityItem, SettledActivityItem, ReceiptJwk, ReceiptLeaf },
  );
}
