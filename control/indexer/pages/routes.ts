/**
 * The indexer's pages and feed ({indexer_url}, per-IP limit, no User-Agent filter, so feed
 * readers can fetch the feeds): `/` (302 to `/activity`), `/activity` (`activity-page.ts`) and
 * `/receipts.atom` (`receipts-feed.ts`). `/` is for people: a request that does not prefer
 * HTML gets 404 `svc_not_found` there. `/changelog.atom` and `/status.atom` are the public
 * site's feeds, passed to the indexer's router by `../../server.ts`. Each is built at most
 * once per TTL (`cache.statsTtlS`) and answered with `Cache-Control`, an `ETag` and 304; pages
 * get a fresh CSP nonce per response (`../../pages/respond.ts`).
 */
import type { ActivityItem } from '../../../protocol/indexer';
import type { ControlContext } from '../../context';
import type { Router } from '../../http/router';
import { CachedValue, ResponseCache } from '../../http/cache';
import type { OpaqueIds } from '../../../protocol/opaque-ids';
import { parseBefore, type CursorCodec } from '../../activity-cursor';
import { activityItem } from '../../activity-item';
import { ATOM_CONTENT_TYPE, FEED_ENTRIES, FEED_HEADERS, renderAtom } from '../../pages/atom';
import { sendPage } from '../../pages/respond';
import { PAGE_REFUNDS, forPeople, pageUrls, registerFavicon } from '../../pages/site';
import { activityPage } from '../stats';
import { parseActivityQuery, renderActivityPage, type ActivityView } from './activity-page';
import { publicPool } from '../../pool';
import { chartFrom } from '../../pages/pool-chart';
import { receiptsFeed } from './receipts-feed';

/** Settlement batches listed on the activity page. @default 10 */
export const PAGE_BATCHES = 10;

/** The call with gateway call id `callId`, with opaque ids; null when none is recorded. */
async function lookupCall(ctx: ControlContext, ids: OpaqueIds, callId: string): Promise<ActivityItem | null> {
  const row = await ctx.store.publicReads.call(callId);
  return row === null ? null : activityItem(ids, row);
}

/** `/` (302 to `/activity`), `/activity` and the receipts' feed on the indexer's router. */
export function registerIndexerPageRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds, cursors: CursorCodec): void {
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statsTtlS, now: ctx.now });
  const limit = ctx.config.public.activityPageSize;
  // The providers a filter may name, read once per TTL like the page itself.
  const providers = new CachedValue(ctx.config.cache.statsTtlS, ctx.now, () => ctx.store.endpoints.list());
  registerFavicon(router);
  router.get('/', { otherQuery: 'ignore' }, ({ req, res }) => {
    forPeople(req);
    res.writeHead(302, { location: '/activity', vary: 'Accept', 'cache-control': 'no-store', 'content-length': '0' });
    res.end();
  });
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
    const endpoints = await providers.get();
    const { asked, filter } = parseActivityQuery(query, new Map(endpoints.map((e) => [ids.provider(e.id), e.id])));
    const key = `activity:${before === null ? '' : `${before.started_at}:${before.call_id}`}:${JSON.stringify(asked)}`;
    await sendPage(
      req,
      res,
      cache,
      key,
      async () => {
        const now = ctx.now();
        const [totals, pool, poolDays] = await Promise.all([
          ctx.store.ledger.totals(),
          publicPool(ctx),
          ctx.store.lps.days(chartFrom(now)),
        ]);
        const view: ActivityView = {
          totals: {
            ...totals,
            pool_size: pool.capital,
            pool,
            pool_days: poolDays,
            now,
            settler: (await ctx.settler())?.state ?? 'not_running',
          },
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
