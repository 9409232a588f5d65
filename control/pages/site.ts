/**
 * What the two sites (the public API's pages and the indexer's) answer alike: no favicon, `/`
 * for people only, the listeners' URLs the pages link between, and how many refunds a page
 * lists.
 */
import { SvcError } from '../../protocol/errors';
import { prefersHtml } from '../http/accept';
import type { ControlContext } from '../context';
import type { RequestContext, Router } from '../http/router';
import type { PageUrls } from './layout';

/** Refunded calls listed on a provider's page and on the activity page. @default 20 */
export const PAGE_REFUNDS = 20;

export const pageUrls = (ctx: ControlContext): PageUrls => ({ api: ctx.urls.api, indexer: ctx.urls.indexer });

/**
 * `GET /favicon.ico`: browsers ask every origin for one; the answer is "none" (204, cached for
 * a day), so a visit logs no failed request. The pages' CSP loads no image anyway.
 */
export function registerFavicon(router: Router): void {
  router.get('/favicon.ico', { otherQuery: 'ignore' }, ({ res }) => {
    res.writeHead(204, { 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' });
    res.end();
  });
}

/** `/` for a person; for a program, the 404 `svc_not_found` every unknown path gets. */
export function forPeople(req: RequestContext['req']): void {
  if (!prefersHtml(req.headers.accept)) throw new SvcError('svc_not_found', `no route for ${req.method} /`);
}
