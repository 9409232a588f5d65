/**
 * The indexer listener ({indexer_url}): `/health`, `/api/stats`, `/api/activity`, the
 * `/activity` page and the receipts' feed (`pages/routes.ts`), the routes of other features
 * passed in by `../server.ts` (the public site's feeds), and the settlement receipts
 * (`receipts.ts`: keys, receipts, per-call proofs), every answer cached (`cache.statsTtlS`)
 * with `Cache-Control`, `ETag` and 304, behind the same generous per-client-IP limit as the
 * public API. No User-Agent filter here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerProblemsWith, sendJson } from '../../runtime/http';
import { HEALTH_BODY } from '../../protocol/wire';
import type { Logger } from '../../runtime/log';
import type { ControlContext, RegisterRoutes } from '../context';
import { Router } from '../http/router';
import { renderDocument } from '../../protocol/openapi';
import { JSON_CONTENT_TYPE, ResponseCache, jsonAnswer } from '../http/cache';
import { splitTarget } from '../http/serve';
import { dispatcher } from '../http/dispatch';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { intParam } from '../http/validate';
import { publicIpLimiter } from '../http/rate-limit';
import { CursorCodec } from '../activity-cursor';
import { registerReceiptRoutes } from './receipts';
import { registerIndexerPageRoutes } from './pages/routes';
import { problemPages } from '../pages/respond';
import { parseBefore } from '../activity-cursor';
import { activityPage, statsAnswer } from './stats';

const JSON_HEADERS = { 'access-control-allow-origin': '*', 'x-content-type-options': 'nosniff' };

export function indexerRouter(ctx: ControlContext, more: readonly RegisterRoutes[] = []): Router {
  const ids = new OpaqueIds(ctx.store.idSecret);
  const cursors = new CursorCodec(ctx.store.idSecret);
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statsTtlS, now: ctx.now });
  const p = ctx.config.public;
  const router = new Router()
    .get('/health', ({ res }) => sendJson(res, 200, HEALTH_BODY))
    .get('/openapi.json', ({ req, res }) =>
      cache.send(req, res, 'openapi', () => ({
        body: Buffer.from(renderDocument('indexer')),
        contentType: JSON_CONTENT_TYPE,
        headers: JSON_HEADERS,
      })),
    )
    .get('/api/stats', ({ req, res }) => cache.send(req, res, 'stats', async () => jsonAnswer(await statsAnswer(ctx, ids), JSON_HEADERS)))
    .get('/api/activity', { query: ['limit', 'before'] }, ({ req, res, query }) => {
      const limit = intParam(query, 'limit', p.activityPageSize, p.activityMaxPageSize);
      const before = parseBefore(query.get('before'), cursors);
      const key = `activity:${limit}:${before === null ? '' : `${before.started_at}:${before.call_id}`}`;
      return cache.send(req, res, key, async () => jsonAnswer(await activityPage(ctx, ids, cursors, limit, before), JSON_HEADERS));
    });
  registerReceiptRoutes(router, ctx, JSON_HEADERS);
  registerIndexerPageRoutes(router, ctx, ids, cursors);
  for (const register of more) register(router, ctx);
  return router;
}

/** The whole {indexer_url} request listener: IP limit, then `indexerRouter`; errors as HTML pages for browsers. */
export function indexerListener(
  ctx: ControlContext,
  log: Logger,
  more: readonly RegisterRoutes[] = [],
): (req: IncomingMessage, res: ServerResponse) => void {
  const dispatch = dispatcher(indexerRouter(ctx, more), log);
  const limiter = publicIpLimiter(ctx.config, ctx.now);
  const pages = problemPages(() => ({ api: ctx.urls.api, indexer: ctx.urls.indexer }));
  return (req, res) => {
    answerProblemsWith(res, pages, 'public');
    if (!limiter.admit(req, res)) return;
    const [pathname, search] = splitTarget(req.url);
    dispatch(req, res, pathname, search);
  };
}
