/**
 * The public site's pages and feeds on the public API ({api_url}, behind its per-IP limit and
 * User-Agent filter): `/` (the landing page), `/status`, `/providers`, `/providers/<id>`,
 * `/changelog.atom`, `/status.atom` (`feeds.ts`, also served on the indexer). `/` is for
 * people: a request that does not prefer HTML (`prefersHtml`: the SDK, `Accept:
 * application/json`) gets 404 `svc_not_found` there, as before. Each is built at most once per
 * TTL of the read it shows (`cache.providersTtlS`, `cache.statusTtlS`) and answered with
 * `Cache-Control`, an `ETag` and 304; pages get a fresh CSP nonce per response
 * (`../../pages/respond.ts`). While the database cannot be reached, `/status` answers its last
 * page read, marked stale (503, `X-Svc-Stale-Since`); the other pages answer the error page.
 * The indexer's pages are `../../indexer/pages/`.
 */
import type { ControlContext } from '../../context';
import type { Router } from '../../http/router';
import { ResponseCache } from '../../http/cache';
import type { OpaqueIds } from '../../../protocol/opaque-ids';
import { activityItem } from '../../activity-item';
import { isSvcError } from '../../../protocol/errors';
import type { StatusAnswer } from '../../../protocol/public';
import { sendHtml, sendPage } from '../../pages/respond';
import { PAGE_REFUNDS, forPeople, pageUrls, registerFavicon } from '../../pages/site';
import { statusAnswer } from '../status';
import { renderStatusPage } from '../status-page';
import { registerFeedRoutes } from './feeds';
import { providersHistory, type History } from './history';
import { renderHomePage } from './home-page';
import { boardProvider, parseSort, providersBoard, sortProviders } from './board';
import { renderProviderPage, renderProvidersPage } from './providers-page';

/**
 * On a status page served stale (503) while the database cannot be reached: the instant of the
 * last status read (ISO 8601), which the page shows as "stale since".
 */
export const STALE_SINCE_HEADER = 'x-svc-stale-since';

/** Both pages of `/` depend on `Accept` as well as on `Accept-Encoding`. */
const VARY_ACCEPT = 'Accept, Accept-Encoding';

/** `/`, `/status`, `/providers`, `/providers/<id>` and the two feeds on the public API's router. */
export function registerPageRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds): void {
  const providers = new ResponseCache({ ttlS: ctx.config.cache.providersTtlS, now: ctx.now });
  const status = new ResponseCache({ ttlS: ctx.config.cache.statusTtlS, now: ctx.now });

  registerFavicon(router);
  router.get('/', { otherQuery: 'ignore' }, async ({ req, res }) => {
    forPeople(req);
    await sendPage(req, res, status, 'home', () => renderHomePage(pageUrls(ctx)), ctx.now, VARY_ACCEPT);
  });
  // The last status read, served stale (503, marked) while the database cannot be reached.
  let last: { answer: StatusAnswer; history: History } | null = null;
  router.get('/status', { otherQuery: 'ignore' }, async ({ req, res }) => {
    try {
      await sendPage(
        req,
        res,
        status,
        'status',
        async () => {
          const answer = await statusAnswer(ctx, ids);
          const history = await providersHistory(ctx.store, ids, ctx.config.tiers, ctx.now());
          last = { answer, history };
          return renderStatusPage(answer, history, pageUrls(ctx));
        },
        ctx.now,
      );
    } catch (err) {
      if (last === null || !isSvcError(err) || err.code !== 'svc_store_unavailable') throw err;
      const shown = last;
      sendHtml(res, err.status, (nonce) => renderStatusPage(shown.answer, shown.history, pageUrls(ctx), { stale: true, nonce }), {
        ...err.headers,
        [STALE_SINCE_HEADER]: shown.answer.updated_at,
      });
    }
  });

  router.get('/providers', { query: ['sort', 'order'], otherQuery: 'ignore' }, async ({ req, res, query }) => {
    const sort = parseSort(query);
    await sendPage(
      req,
      res,
      providers,
      `providers:${sort.key}:${sort.order}`,
      async () => {
        const board = await providersBoard(ctx.store, ids, ctx.config.tiers, ctx.now());
        return renderProvidersPage(board, sortProviders(board.providers, sort), sort, pageUrls(ctx));
      },
      ctx.now,
    );
  });

  router.get('/providers/:id', { otherQuery: 'ignore' }, async ({ req, res, params }) => {
    const id = params.id ?? '';
    await sendPage(
      req,
      res,
      providers,
      `provider:${id}`,
      async () => {
        const board = await providersBoard(ctx.store, ids, ctx.config.tiers, ctx.now());
        const p = boardProvider(board, id);
        const history = (await providersHistory(ctx.store, ids, ctx.config.tiers, ctx.now())).providers.find((h) => h.id === id)!;
        const refunds = (await ctx.store.publicReads.refunds(PAGE_REFUNDS, p.endpointId)).map((r) => activityItem(ids, r));
        return renderProviderPage(board, p, history, refunds, pageUrls(ctx));
      },
      ctx.now,
    );
  });

  registerFeedRoutes(router, ctx, ids, status, () => ctx.urls.api);
}
