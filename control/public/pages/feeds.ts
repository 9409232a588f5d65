/**
 * `/changelog.atom`, one entry per changelog entry, and `/status.atom`, the status page's
 * incident history (each maintenance period and each day a provider was HIGH_RISK): served on
 * the public API and on the indexer (`registerIndexerFeedRoutes`, passed to the indexer's
 * router by `../../server.ts`), with the same entries and ids on both. Entry links point at
 * the public API's status page whichever host serves the feed; `self` is the copy that was
 * fetched. The format is `../../pages/atom.ts`.
 */
import { CHANGELOG_DEFAULT_LIMIT } from '../../../protocol/public';
import type { ChangelogEntry } from '../../../protocol/admin';
import type { ControlContext } from '../../context';
import type { Router } from '../../http/router';
import { ResponseCache } from '../../http/cache';
import { OpaqueIds } from '../../../protocol/opaque-ids';
import {
  ATOM_CONTENT_TYPE,
  FEED_ENTRIES,
  FEED_HEADERS,
  feedUuid,
  renderAtom,
  titleOf,
  type AtomEntry,
  type AtomFeed,
} from '../../pages/atom';
import { duration } from '../../pages/layout';
import { providersHistory, type Incident } from './history';

/** `/changelog.atom`: every public changelog entry (newest first), as the status page lists them. */
export function changelogFeed(
  secret: Buffer,
  entries: readonly ChangelogEntry[],
  fallbackUpdated: string,
  feedBase: string,
  apiBase: string,
): AtomFeed {
  return {
    id: feedUuid(secret, 'feed:changelog'),
    title: 'svc changelog',
    subtitle: 'Flag changes and notices from the svc operators',
    updated: entries[0]?.at ?? fallbackUpdated,
    self: `${feedBase}/changelog.atom`,
    alternate: `${apiBase}/status`,
    entries: entries.map((e) => ({
      id: feedUuid(secret, `changelog:${e.id}`),
      title: titleOf(e.text),
      updated: e.at,
      content: e.text,
      category: e.kind,
      link: `${apiBase}/status`,
    })),
  };
}

/** An incident's span in words: `2030-01-01 10:00 UTC to 2030-01-01 11:40 UTC (1 h 40 min)`. */
function span(i: Incident): string {
  const at = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;
  return `${at(i.start)} to ${i.end === null ? 'now (ongoing)' : at(i.end)} (${duration(i.duration_ms)}${i.end === null ? ' so far' : ''})`;
}

/**
 * `/status.atom`: the incident history of the status page, newest first: every maintenance
 * period (with the operators' note) and every day a provider was HIGH_RISK. An entry's id
 * stays the same while it lasts and after; it is updated when it ends.
 */
export function incidentsFeed(
  secret: Buffer,
  incidents: readonly Incident[],
  fallbackUpdated: string,
  feedBase: string,
  apiBase: string,
): AtomFeed {
  const entries = incidents.slice(0, FEED_ENTRIES).map((i): AtomEntry => {
    const who = i.provider === null ? '' : (i.provider.display_name ?? i.provider.id);
    const title =
      i.kind === 'maintenance'
        ? `Maintenance${i.end === null ? ' (ongoing)' : ''}`
        : `HIGH_RISK: ${who} on ${i.start.slice(0, 10)}${i.end === null ? ' (today so far)' : ''}`;
    const note = i.note === null ? '' : i.kind === 'maintenance' ? `\nNote from the operators: ${i.note}` : `\n${i.note}`;
    return {
      id: feedUuid(secret, `status:${i.key}`),
      title,
      updated: i.end ?? i.start,
      content: `${span(i)}${note}`,
      category: i.kind === 'maintenance' ? 'maintenance' : 'high-risk',
      link: `${apiBase}/status`,
    };
  });
  return {
    id: feedUuid(secret, 'feed:status'),
    title: 'svc incidents',
    subtitle: 'Maintenance periods and the days a provider was HIGH_RISK',
    updated: entries.reduce((latest, e) => (e.updated > latest ? e.updated : latest), entries[0]?.updated ?? fallbackUpdated),
    self: `${feedBase}/status.atom`,
    alternate: `${apiBase}/status`,
    entries,
  };
}

/** `/changelog.atom` and `/status.atom` on a listener's router, each feed's `self` link under `self()`. */
export function registerFeedRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds, cache: ResponseCache, self: () => string): void {
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

/** The two feeds on the indexer's router, their `self` links the indexer's. */
export function registerIndexerFeedRoutes(router: Router, ctx: ControlContext): void {
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statusTtlS, now: ctx.now });
  registerFeedRoutes(router, ctx, new OpaqueIds(ctx.store.idSecret), cache, () => ctx.urls.indexer);
}
