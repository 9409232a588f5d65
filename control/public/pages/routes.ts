/**
 * The public pages and feeds. On the public API ({api_url}, behind its per-IP limit and
 * User-Agent filter): `/` (the landing page), `/status`, `/providers`, `/providers/<id>`,
 * `/changelog.atom`, `/status.atom`. On the indexer ({indexer_url}, per-IP limit, no
 * User-Agent filter, so feed readers can fetch the feeds): `/` (302 to `/activity`),
 * `/activity`, `/changelog.atom`, `/status.atom`, `/receipts.atom`. `/` is for people: a request that does not
 * prefer HTML (`prefersHtml`: the SDK, `Accept: application/json`) gets 404 `svc_not_found`
 * there, as before. Each is built at
 * most once per TTL of the read it shows (`cache.providersTtlS`, `cache.statusTtlS`,
 * `cache.statsTtlS`) and answered with `Cache-Control`, an `ETag` and 304; pages get a fresh
 * CSP nonce per response (`respond.ts`).
 */
import { SvcError } from '../../../protocol/errors';
import type { ActivityItem } from '../../../protocol/indexer';
import { CHANGELOG_DEFAULT_LIMIT } from '../../../protocol/public';
import { prefersHtml } from '../../http/accept';
import type { ControlContext } from '../../context';
import type { RequestContext, Router } from '../../http/router';
import { CursorCodec, parseBefore } from '../../activity-cursor';
import { activityItem, activityPage } from '../../indexer/stats';
import { ResponseCache } from '../../http/cache';
import type { OpaqueIds } from '../../ids';
import { statusAnswer } from '../status';
import { renderStatusPage } from '../status-page';
import { parseActivityQuery, renderActivityPage, type ActivityView } from './activity-page';
import { ATOM_CONTENT_TYPE, FEED_ENTRIES, changelogFeed, incidentsFeed, receiptsFeed, renderAtom } from '../../pages/atom';
import { providersHistory } from './history';
import { renderHomePage } from './home-page';
import { boardProvider, parseSort, providersBoard, sortProviders } from './board';
import { renderProviderPage, renderProvidersPage } from './providers-page';
import { sendPage, type PageUrls } from '../../pages/respond';

/** Refunded calls listed on a provider's page and on the activity page. @default 20 */
export const PAGE_REFUNDS = 20;
/** Settlement batches listed on the activity page. @default 10 */
export const PAGE_BATCHES = 10;

const FEED_HEADERS = {
  'access-control-allow-origin': '*',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

/** The call with gateway call id `callId`, with opaque ids; null when none is recorded. */
async function lookupCall(ctx: ControlContext, ids: OpaqueIds, callId: string): Promise<ActivityItem | null> {
  const row = await ctx.store.publicReads.call(callId);
  return row === null ? null : activityItem(ids, row);
}

const pageUrls = (ctx: ControlContext): PageUrls => ({ api: ctx.urls.api, indexer: ctx.urls.indexer });

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
function forPeople(req: RequestContext['req']): void {
  if (!prefersHtml(req.headers.accept)) throw new SvcError('svc_not_found', `no route for ${req.method} /`);
}

/** Both pages of `/` depend on `Accept` as well as on `Accept-Encoding`. */
const VARY_ACCEPT = 'Accept, Accept-Encoding';

/**
 * `/changelog.atom` and `/status.atom` on a listener's router (the public API's and the
 * indexer's): the same entries and ids on both; entry links are absolute, to the public API's
 * status page, and each feed's `self` link is its own copy.
 */
function registerFeedRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds, cache: ResponseCache, self: () => string): void {
  const secret = ctx.store.idSecret;
  const started = new Date(ctx.startedAt).toISOString();
  router.get('/changelog.atom', { otherQuery: 'ignore' }, async ({ req, res }) =>
    cache.send(req, res, 'changelog.atom', async () => ({
      body: Buffer.from(
        renderAtom(
          changelogFeed(
            secret,
            await ctx.store.changelog.list(Math.max(FEED_ENTRIES, CHANGELOG_DEFAULT_LIMIT)),
            started,
            self(),
            ctx.urls.api,
          ),
        ),
      ),
      contentType: ATOM_CONTENT_TYPE,
      headers: FEED_HEADERS,
    })),
  );
  router.get('/status.atom', { otherQuery: 'ignore' }, async ({ req, res }) =>
    cache.send(req, res, 'status.atom', async () => ({
      body: Buffer.from(
        renderAtom(
          incidentsFeed(
            secret,
            (await providersHistory(ctx.store, ids, ctx.config.tiers, ctx.now())).incidents,
            started,
            self(),
            ctx.urls.api,
          ),
        ),
      ),
      contentType: ATOM_CONTENT_TYPE,
      headers: FEED_HEADERS,
    })),
  );
}

/** `/`, `/status`, `/providers`, `/providers/<id>` and the two feeds on the public API's router. */
export function registerPageRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds): void {
  const providers = new ResponseCache({ ttlS: ctx.config.cache.providersTtlS, now: ctx.now });
  const status = new ResponseCache({ ttlS: ctx.config.cache.statusTtlS, now: ctx.now });

  registerFavicon(router);
  router.get('/', { otherQuery: 'ignore' }, async ({ req, res }) => {
    forPeople(req);
    await sendPage(req, res, status, 'home', () => renderHomePage(pageUrls(ctx)), ctx.now, VARY_ACCEPT);
  });
  router.get(
    '/status',
    { otherQuery: 'ignore' },
    async ({ req, res }) =>
      await sendPage(
        req,
        res,
        status,
        'status',
        async () =>
          renderStatusPage(
            await statusAnswer(ctx, ids),
            await providersHistory(ctx.store, ids, ctx.config.tiers, ctx.now()),
            pageUrls(ctx),
          ),
        ctx.now,
      ),
  );

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

/** `/` (302 to `/activity`), `/activity`, the two feeds and the receipts' feed on the indexer's router. */
export function registerIndexerPageRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds, cursors: CursorCodec): void {
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statsTtlS, now: ctx.now });
  const limit = ctx.config.public.activityPageSize;
  registerFavicon(router);
  router.get('/', { otherQuery: 'ignore' }, ({ req, res }) => {
    forPeople(req);
    res.writeHead(302, { location: '/activity', vary: 'Accept', 'cache-control': 'no-store', 'content-length': '0' });
    res.end();
  });
  registerFeedRoutes(router, ctx, ids, new ResponseCache({ ttlS: ctx.config.cache.statusTtlS, now: ctx.now }), () => ctx.urls.indexer);
  router.get('/receipts.atom', { otherQuery: 'ignore' }, async ({ req, res }) => {
    const head = (await ctx.store.receipts.head())?.batch ?? 0;
    await cache.send(req, res, `receipts.atom:${head}`, async () => {
      const latest = await ctx.store.receipts.page(Math.max(0, head - FEED_ENTRIES), FEED_ENTRIES);
      const feed = receiptsFeed(ctx.store.idSecret, latest.reverse(), new Date(ctx.startedAt).toISOString(), ctx.urls.indexer);
      return { body: Buffer.from(renderAtom(feed)), contentType: ATOM_CONTENT_TYPE, headers: FEED_HEADERS };
    });
  });
  router.get('/activity', { query: ['before', 'provider', 'outcome', 'call'], otherQuery: 'ignore' }, async ({ req, res, query }) => {
    const before = parseBefore(query.get('before'), cursors);
    const endpoints = await ctx.store.endpoints.list();
    const { asked, filter } = parseActivityQuery(query, new Map(endpoints.map((e) => [ids.provider(e.id), e.id])));
    const key = `activity:${before === null ? '' : `${before.started_at}:${before.call_id}`}:${JSON.stringify(asked)}`;
    await sendPage(
      req,
      res,
      cache,
      key,
      async () => {
        const totals = await ctx.store.ledger.totals();
        const view: ActivityView = {
          totals: { ...totals, settler: (await ctx.settler())?.state ?? 'not_running' },
          providers: endpoints.map((e) => ids.provider(e.id)).sort(),
          asked,
          lookup: asked.call === null ? null : await lookupCall(ctx, ids, asked.call),
          names: new Map(endpoints.flatMap((e) => (e.display_name === null ? [] : [[ids.provider(e.id), e.display_name] as const]))),
          batches: (await ctx.store.publicReads.batches(PAGE_BATCHES)).map((b) => ({
            id: b.id,
            provider: ids.provider(b.endpoint_id),
            at: new Date(b.created_at).toISOString(),
            calls: b.calls,
            refunds: b.refunds,
            premiums: b.premiums,
            clamped_calls: b.clamped_calls,
          })),
          refunds: (await ctx.store.publicReads.refunds(PAGE_REFUNDS)).map((r) => activityItem(ids, r)),
          page: await activityPage(ctx, ids, cursors, limit, before, filter),
          older: before !== null,
        };
        return renderActivityPage(view, pageUrls(ctx));
      },
      ctx.now,
    );
  });
}
