/**
 * The Atom feeds of the public API and their copies on the indexer (for feed readers, which
 * the public API's User-Agent filter refuses), parsed with a real XML parser: `/changelog.atom`
 * (one entry per changelog entry) and `/status.atom` (the status page's incidents: maintenance periods and HIGH_RISK days). Well-formed XML in
 * the Atom namespace, the elements RFC 4287 requires of a feed and of each entry, entry ids
 * that stay the same across requests and restarts, text escaped, and the same caching,
 * ETag, User-Agent filter and per-IP limit as the other public reads.
 */
import t, { type Test } from 'tap';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { seedPages } from '../fixtures/pages';
import { startTestControl, manualClock, type AdminResponse } from '../fixtures/control';
import { CHROME_UA, get } from '../fixtures/public';
import { forEachStore, testDatabaseUrl } from '../fixtures/stores';

const ATOM_NS = 'http://www.w3.org/2005/Atom';
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface Entry {
  id: string;
  title: string;
  updated: string;
  content: string;
  category?: string;
}

/** Parse a feed and check what RFC 4287 §4.1 requires; returns the entries. */
function parseFeed(t: Test, res: AdminResponse, what: string): { feed: Record<string, any>; entries: Entry[] } {
  t.equal(res.status, 200, `${what}: 200`);
  t.equal(res.headers.get('content-type'), 'application/atom+xml; charset=utf-8', `${what}: Atom`);
  t.equal(XMLValidator.validate(res.text), true, `${what}: well-formed XML`);
  const doc = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    isArray: (name) => ['entry', 'link'].includes(name),
  }).parse(res.text);
  const feed = doc.feed;
  t.ok(feed, `${what}: the root element is feed`);
  t.equal(feed['@xmlns'], ATOM_NS, `${what}: in the Atom namespace`);
  const text = (v: any) => (typeof v === 'object' && v !== null ? v['#text'] : v);
  t.match(text(feed.id), /^urn:uuid:[0-9a-f-]{36}$/, `${what}: atom:id is an IRI`);
  t.ok(text(feed.title), `${what}: atom:title`);
  t.match(feed.updated, RFC3339, `${what}: atom:updated is an RFC 3339 date`);
  t.ok(feed.author?.name, `${what}: atom:author with a name (the entries have none of their own)`);
  const self = (feed.link as any[]).find((l) => l['@rel'] === 'self');
  t.ok(self, `${what}: a self link`);
  const entries: Entry[] = (feed.entry ?? []).map((e: any) => {
    t.match(
      text(e.id),
      /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      `${what}: entry id is a urn:uuid`,
    );
    t.ok(text(e.title), `${what}: entry title`);
    t.match(e.updated, RFC3339, `${what}: entry updated`);
    t.ok(e.content !== undefined, `${what}: entry content (no alternate-only entries)`);
    return { id: text(e.id), title: text(e.title), updated: e.updated, content: text(e.content), category: e.category?.['@term'] };
  });
  t.equal(new Set(entries.map((e) => e.id)).size, entries.length, `${what}: entry ids are unique`);
  t.ok(
    entries.every((e, i) => i === 0 || e.updated <= entries[i - 1]!.updated),
    `${what}: newest first`,
  );
  if (entries.length > 0) t.equal(feed.updated, entries[0]!.updated, `${what}: the feed is as new as its newest entry`);
  return { feed, entries };
}

forEachStore(t, (t, kind) => {
  t.test('the changelog and maintenance feeds', async (t) => {
    const { control, clock } = await seedPages(t, { SVC_CACHE_STATUS_TTL_S: '5' }, kind);
    const api = control.urls.api;
    const changelog = await get(control, api, '/changelog.atom', { 'user-agent': CHROME_UA });
    const { entries } = parseFeed(t, changelog, '/changelog.atom');
    const json = await get(control, api, '/api/v1/changelog');
    t.same(
      entries.map((e) => [e.content, e.updated, e.category]),
      json.body.entries.map((e: { text: string; at: string; kind: string }) => [e.text, e.at, e.kind]),
      'one entry per changelog entry, as /api/v1/changelog lists them',
    );
    t.equal(entries[0]!.title, 'Rate caps raised for all beta keys');
    t.equal(entries[1]!.content, 'maintenance_mode turned off');
    t.equal(entries[2]!.content, 'maintenance_mode turned on: moving <db> & "cache"', 'markup in a note is text, intact');
    t.match(changelog.text, /moving &lt;db&gt; &amp; &quot;cache&quot;/, 'escaped in the bytes');
    const authors = new Set<string>(
      (await control.admin('GET', '/_admin/v1/changelog')).body.entries.map((e: { author: string }) => e.author),
    );
    t.ok(authors.size > 0, 'the changelog has authors');
    for (const author of authors) t.notOk(changelog.text.includes(`>${author}<`), `the author ${author} is not published`);

    const status = await get(control, api, '/status.atom', { 'user-agent': CHROME_UA });
    const incidents = parseFeed(t, status, '/status.atom').entries;
    const flaky = new OpaqueIds(control.handle.ctx.store.idSecret).provider('zq-flaky-endpoint');
    t.same(
      incidents.map((e) => [e.title, e.category]),
      [
        ['Maintenance', 'maintenance'],
        [`HIGH_RISK: ${flaky} on 2030-01-01 (today so far)`, 'high-risk'],
        [`HIGH_RISK: ${flaky} on 2029-12-31`, 'high-risk'],
      ],
      'the status page’s incidents, newest first: the maintenance period, then the HIGH_RISK days',
    );
    t.match(
      incidents[0]!.content,
      /to 2030-01-01 11:40 UTC \(\d+ (h|min)[^)]*\)\nNote from the operators: moving <db> & "cache"$/,
      'with its end and the operator’s note',
    );
    t.equal(incidents[0]!.updated, new Date(Date.UTC(2030, 0, 1, 11, 40)).toISOString(), 'updated when it ended');
    t.match(
      incidents[1]!.content,
      /^2030-01-01 00:00 UTC to now \(ongoing\) .*\nfailure rate 32\.5 % \(26 of 80 calls failed\)$/s,
      'the day’s figures',
    );

    // Stable ids: a new entry does not move the others' ids; the same entry keeps its id.
    await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: true, note: 'again' });
    clock.advance(5_000);
    const later = parseFeed(t, await get(control, api, '/status.atom', { 'user-agent': CHROME_UA }), '/status.atom later').entries;
    t.equal(later.length, 4, 'the new period is an entry');
    t.equal(later[0]!.title, 'Maintenance (ongoing)', 'ongoing, newest first');
    t.match(later[0]!.content, /Note from the operators: again$/);
    t.same(
      later.slice(1).map((e) => e.id),
      incidents.map((e) => e.id),
      'the earlier entries keep their ids',
    );
    const againChangelog = parseFeed(
      t,
      await get(control, api, '/changelog.atom', { 'user-agent': CHROME_UA }),
      '/changelog.atom later',
    ).entries;
    t.same(
      againChangelog.slice(1).map((e) => e.id),
      entries.map((e) => e.id),
      'changelog ids are stable across requests',
    );
    t.not(later[0]!.id, againChangelog[0]!.id, 'the two feeds name their entries apart');

    // Caching, ETag, User-Agent filter.
    for (const path of ['/changelog.atom', '/status.atom']) {
      const first = await get(control, api, path, { 'user-agent': CHROME_UA });
      t.match(first.headers.get('cache-control'), /^public, max-age=\d+$/, `${path}: cacheable`);
      const etag = first.headers.get('etag')!;
      t.match(etag, /^"[A-Za-z0-9_-]{27}"$/, `${path}: strong ETag (the bytes are the same every time)`);
      t.equal((await get(control, api, path, { 'user-agent': CHROME_UA, 'if-none-match': etag })).status, 304, `${path}: 304`);
      const curl = await get(control, api, path, { 'user-agent': 'curl/8.5.0' });
      t.equal(curl.status, 403, `${path}: behind the User-Agent filter`);
      t.equal(curl.body.code, 'svc_forbidden_user_agent');
      t.equal((await get(control, api, path)).status, 200, `${path}: svc-monitor-sdk is served`);
    }
  });

  t.test('the feeds on the indexer, for feed readers: same entries and ids, absolute links to the public API', async (t) => {
    const { control } = await seedPages(t, {}, kind);
    const { api, indexer } = control.urls;
    const FEEDLY = 'Feedly/1.0 (+http://www.feedly.com/fetcher.html; 16 subscribers; like FeedFetcher-Google)';
    for (const path of ['/changelog.atom', '/status.atom']) {
      const refused = await get(control, api, path, { 'user-agent': FEEDLY });
      t.equal(refused.status, 403, `${path}: a feed reader is refused on the public API, as the allow-list says`);
      t.equal(refused.body.code, 'svc_forbidden_user_agent');
      const onApi = await get(control, api, path, { 'user-agent': CHROME_UA });
      const onIndexer = await get(control, indexer, path, { 'user-agent': FEEDLY });
      const a = parseFeed(t, onApi, `${api}${path}`);
      const b = parseFeed(t, onIndexer, `${indexer}${path}`);
      t.ok(b.entries.length > 0, `${path}: the indexer's copy has entries`);
      t.same(
        b.entries.map((e) => [e.id, e.title, e.updated, e.content]),
        a.entries.map((e) => [e.id, e.title, e.updated, e.content]),
        `${path}: the same entries with the same ids on both hosts`,
      );
      t.equal(b.feed.id, a.feed.id, `${path}: the same feed id`);
      const links = (feed: Record<string, any>) => [
        ...(feed.link as any[]).map((l) => [l['@rel'], l['@href']]),
        ...((feed.entry ?? []) as any[]).flatMap((e) => (e.link ?? []).map((l: any) => [l['@rel'], l['@href']])),
      ];
      for (const [name, feed, host] of [
        ['api', a.feed, api],
        ['indexer', b.feed, indexer],
      ] as const) {
        for (const [rel, href] of links(feed)) {
          t.match(href, /^http:\/\//, `${path} on the ${name}: ${rel} link ${href} is absolute`);
          if (rel === 'self') t.equal(href, `${host}${path}`, `${path} on the ${name}: self is this copy`);
          else t.equal(href, `${api}/status`, `${path} on the ${name}: ${rel} points at the status page on the public API`);
        }
      }
      const etag = onIndexer.headers.get('etag')!;
      t.equal(
        (await get(control, indexer, path, { 'user-agent': FEEDLY, 'if-none-match': etag })).status,
        304,
        `${path}: 304 on the indexer`,
      );
    }
  });

  t.test('ids survive a restart; an empty feed is still a valid feed; per-IP limit', async (t) => {
    const clock = manualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
    const dataDir = `${t.testdir()}/data`;
    const startedBefore = Date.now();
    const databaseUrl = await testDatabaseUrl(t, kind);
    const first = await startTestControl(t, {
      dataDir,
      flags: { databaseUrl },
      now: clock.now,
      env: { SVC_LIMITS_PUBLIC_COUNT: '8', SVC_LIMITS_PUBLIC_WINDOW_S: '600' },
    });
    const startedAfter = Date.now();
    const empty = parseFeed(t, await get(first, first.urls.api, '/status.atom'), 'empty /status.atom');
    t.same(empty.entries, [], 'no entries before any maintenance');
    const updated = Date.parse(empty.feed.updated);
    t.ok(updated >= startedBefore && updated <= startedAfter, 'updated: when control started');
    await first.admin('POST', '/_admin/v1/changelog', { text: 'hello\tworld' });
    const before = parseFeed(t, await get(first, first.urls.api, '/changelog.atom'), 'before restart').entries;
    for (let i = 0; i < 8; i++) {
      const res = await get(first, first.urls.api, '/changelog.atom');
      if (res.status === 429) {
        t.equal(res.body.code, 'svc_rate_limited', '429 past the per-IP limit');
        t.ok(res.headers.get('retry-after'), 'with Retry-After');
        break;
      }
      t.ok(i < 6, 'the limit is reached');
    }
    await first.close();
    clock.advance(3_600_000);
    const second = await startTestControl(t, { dataDir, now: clock.now, flags: { databaseUrl } });
    const after = parseFeed(t, await get(second, second.urls.api, '/changelog.atom'), 'after restart').entries;
    t.same(
      after.map((e) => e.id),
      before.map((e) => e.id),
      'the same entry, the same id, after a restart',
    );
    t.equal(after[0]!.content, 'hello\tworld', 'a tab in free text survives');
  });
});
