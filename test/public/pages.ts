/**
 * The public pages over HTTP, in-process, on seeded data (one provider per tier, settled):
 * `/providers` (a row per provider with its tier, figures and sparkline, sorted through
 * links, UNRATED as such), `/providers/<id>` (figures, hourly bars, last refunds),
 * `/activity` on the indexer (batches linked to receipts, refunds, calls paged by cursor) and
 * `/status`. Every page: a strict CSP whose nonce is fresh per response and is the one on the
 * page's only `<style>`; a weak ETag and 304 (without a CSP); `Cache-Control`; the User-Agent
 * filter on the public API; 429 past the per-IP limit; and no endpoint id, upstream URL, key
 * id or gateway id anywhere in the bytes.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { CHROME_UA, get } from '../fixtures/public';
import { HOUR, MINUTE, NOW, PROVIDERS, SECRET_GATEWAY, hourRate, seedPages } from '../fixtures/pages';
import { forEachStore } from '../fixtures/stores';
import { OpaqueIds } from '../../protocol/opaque-ids';
import type { AdminResponse, TestControl } from '../fixtures/control';

const browser = (control: TestControl, base: string, path: string, headers: Record<string, string> = {}) =>
  get(control, base, path, { 'user-agent': CHROME_UA, ...headers });

/** The rows of the providers table: [opaque id, tier], in page order. */
const rowsOf = (html: string): [string, string][] =>
  [...html.matchAll(/<tr data-provider="(prv_\w+)" data-tier="(\w+)">/g)].map((m) => [m[1]!, m[2]!]);

/** Checks every page shares: headers, nonce, no secrets. */
function checkPage(t: Test, res: AdminResponse, what: string, secrets: string[]): void {
  t.equal(res.status, 200, `${what}: 200`);
  t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8', `${what}: HTML`);
  const csp = res.headers.get('content-security-policy') ?? '';
  const nonce = /style-src 'nonce-([A-Za-z0-9+/=]{24})'/.exec(csp)?.[1];
  t.ok(nonce, `${what}: styles allowed by a nonce only`);
  t.match(csp, /default-src 'none'/, `${what}: nothing else loads`);
  t.match(csp, /script-src 'nonce-/, `${what}: no script but by nonce (and the page has none)`);
  t.match(csp, /frame-ancestors 'none'/, `${what}: never framed (the CSP, which browsers enforce in place of X-Frame-Options)`);
  t.match(res.text, /<meta name="referrer" content="no-referrer">/, `${what}: links send no referrer`);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
  t.equal([...res.text.matchAll(/nonce="([^"]+)"/g)].map((m) => m[1]).join(), nonce, `${what}: the page's one nonce is the CSP's`);
  t.notMatch(res.text, /<script|\sstyle="|\son[a-z]+=/i, `${what}: no script, no style attribute, no event handler`);
  t.notMatch(res.text, /svc-nonce-placeholder/, `${what}: the placeholder was replaced`);
  t.match(res.headers.get('etag'), /^W\/"[A-Za-z0-9_-]{27}(-gz)?"$/, `${what}: a weak ETag`);
  t.equal(res.headers.get('vary'), 'Accept-Encoding', `${what}: varies with Accept-Encoding`);
  t.match(res.headers.get('cache-control'), /^public, max-age=\d+$/, `${what}: cacheable`);
  t.equal(res.headers.get('x-content-type-options'), 'nosniff');
  if (res.headers.get('content-encoding') === null)
    t.equal(res.headers.get('content-length'), String(Buffer.byteLength(res.text)), `${what}: the length of what was sent`);
  for (const header of ['status', 'providers', 'activity', 'apply'])
    t.match(res.text, new RegExp(`<nav aria-label="Site">[\\s\\S]*>${header}</a>`), `${what}: the header links to ${header}`);
  for (const secret of secrets) t.notOk(res.text.includes(secret), `${what}: never shows ${secret}`);
}

t.test('the providers page, a provider page, the activity page and the status page', async (t) => {
  forEachStore(t, async (t, kind) => {
    const { control, keyId, records } = await seedPages(t, { SVC_CACHE_PROVIDERS_TTL_S: '10' }, kind);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const secrets = [...PROVIDERS.flatMap((p) => [p.endpoint, p.upstream, new URL(p.upstream).host]), keyId, SECRET_GATEWAY, 'gw-test'];
    const api = control.urls.api;

    // --- /providers -------------------------------------------------------------------------
    const list = await browser(control, api, '/providers');
    checkPage(t, list, '/providers', secrets);
    t.same(
      rowsOf(list.text),
      [PROVIDERS[0], PROVIDERS[1], PROVIDERS[2], PROVIDERS[3]].map((p) => [ids.provider(p!.endpoint), p!.tier]),
      'a row per provider, each with its tier, best tier first by default',
    );
    t.match(list.text, />UNRATED</, 'UNRATED is written out');
    t.match(list.text, /Weather v2 <code class="muted">prv_/, 'the display name beside the opaque id');
    t.match(list.text, /Search &lt;beta&gt; &amp; &quot;friends&quot;/, 'a display name is escaped');
    t.notMatch(list.text, /Search <beta>/, 'never written raw');
    for (const [tier, rule] of [
      ['RELIABLE', 'failure rate below 1 %'],
      ['ELEVATED', 'failure rate from 1 % to 5 %'],
      ['HIGH_RISK', 'failure rate above 5 %'],
      ['UNRATED', 'fewer than 20 calls in the last 24 h: too few to rate'],
    ])
      t.match(
        list.text,
        new RegExp(`id="tier-legend"[\\s\\S]*tier-${tier}">${tier}</span> <span>${rule}</span>`),
        `the legend states the ${tier} rule`,
      );
    const flakyRow = new RegExp(`data-provider="${ids.provider('zq-flaky-endpoint')}"[\\s\\S]*?</tr>`).exec(list.text)![0];
    t.match(flakyRow, /data-label="Failure rate">25 %</, 'failure rate over the window (30 of 120)');
    t.match(flakyRow, /data-label="Calls">120</);
    t.match(flakyRow, /data-label="p50">\d+ ms</);
    t.match(flakyRow, /data-label="p99">\d+ ms</);
    t.equal([...flakyRow.matchAll(/<circle class="pt"/g)].length, 3, 'its sparkline has a point per hour with calls');

    // Sorting through links: each header link is a URL that answers in its order.
    const byRate = await browser(control, api, '/providers?sort=failure_rate&order=desc');
    checkPage(t, byRate, '/providers?sort=failure_rate&order=desc', secrets);
    t.same(
      rowsOf(byRate.text).map((r) => r[1]),
      ['HIGH_RISK', 'ELEVATED', 'RELIABLE', 'UNRATED'],
      'highest failure rate first, UNRATED last',
    );
    t.match(
      byRate.text,
      /aria-sort="descending"><a href="\/providers\?sort=failure_rate&amp;order=asc"/,
      'the sorted column links to the other direction',
    );
    const worst = await browser(control, api, '/providers?sort=tier&order=desc');
    t.same(
      rowsOf(worst.text).map((r) => r[1]),
      ['HIGH_RISK', 'ELEVATED', 'RELIABLE', 'UNRATED'],
      'worst tier first',
    );
    const lowest = await browser(control, api, '/providers?sort=failure_rate&order=asc');
    t.same(
      rowsOf(lowest.text).map((r) => r[1]),
      ['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'],
    );
    for (const href of [...list.text.matchAll(/href="(\/providers\?sort=[^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'))) {
      t.equal((await browser(control, api, href)).status, 200, `${href} answers`);
    }
    const bad = await browser(control, api, '/providers?sort=upstream');
    t.equal(bad.status, 400, 'an unknown order is refused');
    t.equal(bad.body.code, 'svc_bad_request');

    // --- /providers/<id> ----------------------------------------------------------------------
    const flakyId = ids.provider('zq-flaky-endpoint');
    t.match(list.text, `href="/providers/${flakyId}"`, 'each row links to its provider page');
    const flaky = await browser(control, api, `/providers/${flakyId}`);
    checkPage(t, flaky, '/providers/<id>', secrets);
    t.match(flaky.text, /<h1>prv_\w+<\/h1>/, 'a provider without a display name is titled by its opaque id');
    t.match(flaky.text, /<dt>Tier<\/dt><dd><span class="tier tier-HIGH_RISK">HIGH_RISK<\/span> failure rate above 5 %/);
    t.match(flaky.text, /<dt>Failure rate<\/dt><dd>25 % \(30 of 120 calls in the last 24 h\)/);
    t.match(flaky.text, /p50 \d+ ms, p95 \d+ ms, p99 \d+ ms/);
    const bars = [...flaky.text.matchAll(/<g class="bar" data-slot="(\d+)" data-calls="(\d+)">/g)];
    const seeded = PROVIDERS[2]!.hours;
    t.same(
      bars.map((b) => [Number(b[1]), Number(b[2])]),
      seeded.map((h) => [24 - h.ago, h.calls]).sort((a, b) => a[0]! - b[0]!),
      'a bar for each seeded hour, in its slot, with its calls',
    );
    for (const h of seeded) {
      const g = new RegExp(`data-slot="${24 - h.ago}"[\\s\\S]*?</g>`).exec(flaky.text)![0];
      for (const [kind, n] of Object.entries(h.failures))
        t.match(g, new RegExp(`${n} ${kind.replace('_', ' ')}`), `hour -${h.ago}: ${n} ${kind}`);
    }
    const refundRows = [...flaky.text.matchAll(/<td data-label="Receipt"><a href="([^"]+)">batch (\d+)<\/a>/g)];
    t.equal(refundRows.length, 20, 'the last 20 refunds (30 were refunded)');
    t.ok(
      refundRows.every((r) => r[1] === `${control.urls.indexer}/api/receipts/${r[2]}`),
      'each links to its batch receipt on the indexer',
    );
    const receipt = await get(control, control.urls.indexer, `/api/receipts/${refundRows[0]![2]}`);
    t.equal(receipt.status, 200, 'and the receipt is there');
    const refundTimes = [...flaky.text.matchAll(/<td data-label="Started"><time datetime="([^"]+)"/g)].map((m) => m[1]!);
    t.same(refundTimes, [...refundTimes].sort().reverse(), 'newest refund first');
    t.ok(
      refundTimes.every((at) => Date.parse(at) >= NOW - 4 * HOUR),
      'the newest twenty are from the last hours (not the hour 20 h ago)',
    );

    const steady = await browser(control, api, `/providers/${ids.provider('zq-steady-endpoint')}`);
    t.match(steady.text, /<h1>Weather v2<\/h1>/, 'titled by its display name');
    t.equal([...steady.text.matchAll(/<td data-label="Receipt">/g)].length, 1, 'its one refund');
    const sparse = await browser(control, api, `/providers/${ids.provider('zq-sparse-endpoint')}`);
    t.match(sparse.text, /tier-UNRATED">UNRATED<\/span> fewer than 20 calls/, 'UNRATED says why');
    const unknown = await browser(control, api, '/providers/prv_nope');
    t.equal(unknown.status, 404);
    t.equal(unknown.body.code, 'svc_not_found');
    const byEndpointId = await browser(control, api, '/providers/zq-flaky-endpoint');
    t.equal(byEndpointId.status, 404, 'an endpoint id is not a provider id');

    // --- /activity on the indexer ---------------------------------------------------------------
    const activity = await browser(control, control.urls.indexer, '/activity');
    checkPage(t, activity, '/activity', secrets);
    t.match(activity.text, /<dt>Settled<\/dt><dd>925 calls in 4 batches<\/dd>/, 'totals from the ledger');
    const batchRows = [...activity.text.matchAll(/<tr data-batch="(\d+)">/g)].map((m) => Number(m[1]));
    t.same(batchRows, [4, 3, 2, 1], 'the settled batches, newest first');
    t.match(activity.text, /<a href="\/api\/receipts\/4" data-receipt="4">batch 4<\/a>/, 'each batch links to its receipt');
    const refunded = records
      .filter((r) => r.outcome !== 'ok')
      .sort((a, b) => b.started_at.localeCompare(a.started_at) || (a.call_id < b.call_id ? 1 : -1))
      .slice(0, 20)
      .map((r) => ids.call(r.call_id));
    const recent = /<table class="cards oneline" id="recent-refunds">[\s\S]*?<\/table>/.exec(activity.text)![0];
    t.same(
      [...recent.matchAll(/<tr data-call="(call_\w+)"/g)].map((m) => m[1]),
      refunded,
      'recent refunds: the last 20 refunded calls, newest first',
    );
    t.ok(
      [...recent.matchAll(/data-label="Refund">([\d.]+)/g)].every((m) => Number(m[1]) === 2.1),
      'each with its refund (price 2 + premium 0.1)',
    );
    const callRows = [...activity.text.matchAll(/<tr data-call="(call_\w+)" data-batch="(\d+)">/g)];
    t.ok(callRows.length > 50, 'refunds and a page of calls, every one settled');
    t.notMatch(activity.text, /data-call="[^"]*"(?! data-batch)>/, 'every call shown is settled and carries its batch');
    for (const r of PROVIDERS) t.notOk(activity.text.includes(r.endpoint), 'no endpoint id');
    const gatewayCallIds = (await control.request(`${control.urls.indexer}/api/activity?limit=5`)).body.activity.map(
      (a: { call_id: string }) => a.call_id,
    );
    t.ok(
      gatewayCallIds.every((id: string) => id.startsWith('call_')),
      'the JSON activity uses the same opaque ids',
    );

    // Paging with the indexer's cursor: the link to older calls is `next_before` of /api/activity.
    const older = /href="\/activity\?before=([^"]+)" id="older"/.exec(activity.text);
    t.ok(older, 'a link to older calls');
    const json = await get(control, control.urls.indexer, '/api/activity');
    t.equal(decodeURIComponent(older![1]!), json.body.next_before, 'the same cursor as /api/activity');
    const page2 = await browser(control, control.urls.indexer, `/activity?before=${older![1]}`);
    checkPage(t, page2, '/activity?before=', secrets);
    const firstIds = [...activity.text.matchAll(/<table class="cards oneline" id="calls">[\s\S]*?<\/table>/g)][0]![0].match(/call_\w+/g)!;
    const secondIds = [...page2.text.matchAll(/<table class="cards oneline" id="calls">[\s\S]*?<\/table>/g)][0]![0].match(/call_\w+/g)!;
    t.equal(new Set(firstIds).size, 50, 'a page of 50 calls');
    t.same(
      secondIds.filter((id) => firstIds.includes(id)),
      [],
      'the next page has other calls',
    );
    const json2 = await get(control, control.urls.indexer, `/api/activity?before=${older![1]}`);
    t.same(
      [...new Set(secondIds)],
      json2.body.activity.map((a: { call_id: string }) => a.call_id),
      'the same calls as the JSON page',
    );
    t.match(page2.text, /<a href="\/activity" id="newest">Newest calls<\/a>/, 'and a way back');
    const badCursor = await browser(control, control.urls.indexer, '/activity?before=nope');
    t.equal(badCursor.status, 400, 'a cursor the indexer did not issue is refused');

    // --- /status links to everything ----------------------------------------------------------
    const status = await browser(control, api, '/status');
    checkPage(t, status, '/status', secrets);
    for (const href of [
      '/providers',
      `${control.urls.indexer}/activity`,
      `${control.urls.indexer}/changelog.atom`,
      `${control.urls.indexer}/status.atom`,
    ])
      t.match(status.text, `href="${href}"`, `/status links to ${href}`);
    t.match(
      status.text,
      `<link rel="alternate" type="application/atom+xml" title="svc maintenance" href="${control.urls.indexer}/status.atom">`,
      'feeds are discoverable, on the indexer (no User-Agent filter there)',
    );
  });
});

t.test('a fresh nonce per response, one cached page, weak ETag and 304 without a CSP', async (t) => {
  const { control, clock } = await seedPages(t, {
    SVC_CACHE_PROVIDERS_TTL_S: '10',
    SVC_CACHE_STATS_TTL_S: '3',
    SVC_CACHE_STATUS_TTL_S: '7',
  });
  const flaky = new OpaqueIds(control.handle.ctx.store.idSecret).provider('zq-flaky-endpoint');
  const pages: [string, string, number][] = [
    [control.urls.api, '/providers', 10],
    [control.urls.api, `/providers/${flaky}`, 10],
    [control.urls.api, '/status', 7],
    [control.urls.indexer, '/activity', 3],
  ];
  for (const [base, path, ttl] of pages) {
    const first = await browser(control, base, path);
    const second = await browser(control, base, path);
    const nonce = (r: AdminResponse) => /'nonce-([^']+)'/.exec(r.headers.get('content-security-policy') ?? '')?.[1];
    t.not(nonce(first), nonce(second), `${path}: a new nonce each time`);
    t.match(second.text, `nonce="${nonce(second)}"`, `${path}: the page carries its response's nonce`);
    t.equal(second.text.replace(/nonce="[^"]+"/, ''), first.text.replace(/nonce="[^"]+"/, ''), `${path}: otherwise the same cached page`);
    t.equal(first.headers.get('etag'), second.headers.get('etag'), `${path}: one ETag for the cached page`);
    t.equal(first.headers.get('cache-control'), `public, max-age=${ttl}`, `${path}: max-age is the TTL of its read`);
    const etag = first.headers.get('etag')!;
    const again = await browser(control, base, path, { 'if-none-match': etag });
    t.equal(again.status, 304, `${path}: 304 for the current ETag`);
    t.equal(again.text, '');
    t.equal(again.headers.get('etag'), etag);
    t.equal(again.headers.get('content-security-policy'), null, `${path}: a 304 carries no CSP (the stored one matches the stored body)`);
    t.equal(
      (await browser(control, base, path, { 'if-none-match': etag.slice(2) })).status,
      304,
      `${path}: the strong form of the tag matches too`,
    );
    t.equal((await browser(control, base, path, { 'if-none-match': 'W/"other"' })).status, 200, `${path}: another tag gets the page`);
  }

  // Rebuilt after the TTL, with the new numbers.
  const before = await browser(control, control.urls.api, '/providers');
  await control.admin('PATCH', '/_admin/v1/endpoints/zq-flaky-endpoint', { display_name: 'Flaky Co' });
  clock.advance(9_000);
  t.notMatch((await browser(control, control.urls.api, '/providers')).text, /Flaky Co/, 'within the TTL: the cached page');
  clock.advance(1_000);
  const after = await browser(control, control.urls.api, '/providers', { 'if-none-match': before.headers.get('etag')! });
  t.equal(after.status, 200, 'after the TTL the old ETag no longer matches');
  t.match(after.text, /Flaky Co/, 'the page is rebuilt');
  t.not(after.headers.get('etag'), before.headers.get('etag'));
  t.ok(clock.now() > NOW + MINUTE);
});

t.test('User-Agent filter on the public API pages; per-IP limit on both listeners', async (t) => {
  const { control } = await seedPages(t, { SVC_LIMITS_PUBLIC_COUNT: '60', SVC_LIMITS_PUBLIC_WINDOW_S: '600' });
  const flaky = new OpaqueIds(control.handle.ctx.store.idSecret).provider('zq-flaky-endpoint');
  for (const path of ['/providers', `/providers/${flaky}`, '/status']) {
    for (const ua of ['curl/8.5.0', 'node', '']) {
      const res = await get(control, control.urls.api, path, { 'user-agent': ua });
      t.equal(res.status, 403, `${path} refuses ${JSON.stringify(ua)}`);
      t.equal(res.body.code, 'svc_forbidden_user_agent');
    }
    t.equal((await get(control, control.urls.api, path)).status, 200, `${path} serves svc-monitor-sdk`);
  }
  t.equal(
    (await get(control, control.urls.indexer, '/activity', { 'user-agent': 'curl/8.5.0' })).status,
    200,
    'the indexer has no User-Agent filter',
  );

  for (const [base, path] of [
    [control.urls.api, '/providers'],
    [control.urls.indexer, '/activity'],
  ] as const) {
    let res: AdminResponse | null = null;
    for (let i = 0; i < 61; i++) {
      res = await browser(control, base, path);
      if (res.status === 429) break;
    }
    t.equal(res!.status, 429, `${path}: 429 past the per-IP limit`);
    t.equal(res!.body.code, 'svc_rate_limited');
    t.match(res!.headers.get('retry-after'), /^[1-9]\d*$/, 'with Retry-After');
    t.ok(res!.headers.get('ratelimit-policy'), 'and RateLimit-Policy');
  }
});

t.test('hourly rates in the sparkline follow the seeded hours', async (t) => {
  forEachStore(t, async (t, kind) => {
    const { control } = await seedPages(t, {}, kind);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const list = await browser(control, control.urls.api, '/providers');
    for (const p of PROVIDERS) {
      const row = new RegExp(`data-provider="${ids.provider(p.endpoint)}"[\\s\\S]*?</tr>`).exec(list.text)![0];
      const ys = [...row.matchAll(/<circle class="pt" cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => [Number(m[1]), Number(m[2])]);
      const hours = [...p.hours].sort((a, b) => b.ago - a.ago);
      t.equal(ys.length, hours.length, `${p.tier}: a point per seeded hour`);
      const scale = Math.max(0.1, ...hours.map(hourRate));
      hours.forEach((h, k) => {
        const x = 2 + (116 * (24 - h.ago)) / 23;
        const y = 26 - (24 * hourRate(h)) / scale;
        t.ok(Math.abs(ys[k]![0]! - x) < 0.01 && Math.abs(ys[k]![1]! - y) < 0.01, `${p.tier}: hour -${h.ago} at rate ${hourRate(h)}`);
      });
    }
  });
});

/** GET with exactly these headers; the raw bytes, undecoded. */
function raw(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

t.test('gzip for clients that accept it: compressed once, the nonce still fresh per answer', async (t) => {
  const { control } = await seedPages(t);
  for (const [base, path] of [
    [control.urls.api, '/providers'],
    [control.urls.indexer, '/activity'],
  ] as const) {
    const plain = await raw(base + path, { 'user-agent': CHROME_UA });
    t.equal(plain.headers['content-encoding'], undefined, `${path}: without Accept-Encoding, identity`);
    t.match(plain.headers.etag, /^W\/"[A-Za-z0-9_-]{27}"$/, `${path}: identity has a weak ETag of its own`);
    t.equal(Number(plain.headers['content-length']), plain.body.length, `${path}: identity Content-Length`);
    const plainNonce = /'nonce-([^']+)'/.exec(String(plain.headers['content-security-policy']))![1];
    t.match(plain.body.toString(), `<style nonce="${plainNonce}">`, `${path}: the identity page carries its answer's nonce`);
    const again = await raw(base + path, { 'user-agent': CHROME_UA });
    t.not(
      /'nonce-([^']+)'/.exec(String(again.headers['content-security-policy']))![1],
      plainNonce,
      `${path}: identity answers get fresh nonces too`,
    );
    t.equal(
      (await raw(base + path, { 'user-agent': CHROME_UA, 'if-none-match': String(plain.headers.etag) })).status,
      304,
      `${path}: 304 for the identity ETag`,
    );
    const zipped = [
      await raw(base + path, { 'user-agent': CHROME_UA, 'accept-encoding': 'gzip, deflate, br' }),
      await raw(base + path, { 'user-agent': CHROME_UA, 'accept-encoding': 'br;q=1, gzip;q=0.5' }),
    ];
    for (const z of zipped) {
      t.equal(z.status, 200);
      t.equal(z.headers['content-encoding'], 'gzip', `${path}: gzip when accepted`);
      t.equal(Number(z.headers['content-length']), z.body.length, `${path}: Content-Length is the compressed length`);
      t.ok(z.body.length * 3 < plain.body.length, `${path}: much smaller (${z.body.length} of ${plain.body.length} bytes)`);
      const html = gunzipSync(z.body).toString(); // checks the CRC-32 and the length in the trailer
      const nonce = /'nonce-([^']+)'/.exec(String(z.headers['content-security-policy']))![1];
      t.match(html, `<style nonce="${nonce}">`, `${path}: the decompressed page carries this answer's nonce`);
      t.equal(
        html.replace(/ nonce="[^"]+"/, ''),
        plain.body.toString().replace(/ nonce="[^"]+"/, ''),
        `${path}: the same page as the identity answer`,
      );
      t.not(z.headers.etag, plain.headers.etag, `${path}: another representation, another ETag`);
      t.equal(
        (await raw(base + path, { 'user-agent': CHROME_UA, 'accept-encoding': 'gzip', 'if-none-match': String(z.headers.etag) })).status,
        304,
        `${path}: 304 for the gzip ETag`,
      );
    }
    t.not(zipped[0]!.headers['content-security-policy'], zipped[1]!.headers['content-security-policy'], `${path}: two answers, two nonces`);
    t.equal(zipped[0]!.headers.etag, zipped[1]!.headers.etag, `${path}: one cached page`);
    const refused = await raw(base + path, { 'user-agent': CHROME_UA, 'accept-encoding': 'gzip;q=0, br' });
    t.equal(refused.headers['content-encoding'], undefined, `${path}: gzip;q=0 is a refusal`);
  }
});
