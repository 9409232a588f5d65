/**
 * Caching and per-IP limits on {api_url} and {indexer_url}: `Cache-Control: public,
 * max-age`, a strong `ETag` and 304 on `If-None-Match`, answers built once per TTL (on the
 * injected clock), and 429 `svc_rate_limited` with `Retry-After` past `limits.public*`.
 */
import t from 'tap';
import { manualClock, startTestControl } from '../fixtures/control';
import { CHROME_UA, addEndpoint, get, ingest, outcome } from '../fixtures/public';
import { etagMatches } from '../../control/http/cache';
import { IpRateLimiter } from '../../control/http/rate-limit';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

t.test('Cache-Control, ETag and 304 on every cached answer', async (t) => {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, {
    now: clock.now,
    env: { SVC_CACHE_PROVIDERS_TTL_S: '10', SVC_CACHE_STATUS_TTL_S: '7', SVC_CACHE_STATS_TTL_S: '3' },
  });
  const routes: [string, string, number][] = [
    [control.urls.api, '/api/v1/providers', 10],
    [control.urls.api, '/api/v1/status', 7],
    [control.urls.api, '/status', 7],
    [control.urls.api, '/api/v1/changelog', 7],
    [control.urls.indexer, '/api/stats', 3],
    [control.urls.indexer, '/api/activity', 3],
  ];
  for (const [base, path, ttl] of routes) {
    const first = await get(control, base, path, { 'user-agent': CHROME_UA });
    t.equal(first.status, 200, `${path}: 200`);
    t.equal(first.headers.get('cache-control'), `public, max-age=${ttl}`, `${path}: public, max-age=${ttl}`);
    const etag = first.headers.get('etag');
    // Pages carry a fresh CSP nonce in every answer: the same page, not the same bytes (a weak ETag).
    t.match(
      etag,
      path === '/status' ? /^W\/"[A-Za-z0-9_-]{27}(-gz)?"$/ : /^"[A-Za-z0-9_-]{27}"$/,
      `${path}: ${path === '/status' ? 'weak' : 'strong'} ETag`,
    );

    const again = await get(control, base, path, { 'user-agent': CHROME_UA, 'if-none-match': etag! });
    t.equal(again.status, 304, `${path}: 304 for the current ETag`);
    t.equal(again.text, '', `${path}: no body with 304`);
    t.equal(again.headers.get('etag'), etag, `${path}: 304 repeats the ETag`);

    const weak = await get(control, base, path, { 'user-agent': CHROME_UA, 'if-none-match': `"other", W/${etag!.replace(/^W\//, '')}` });
    t.equal(weak.status, 304, `${path}: weak comparison inside a list`);
    const stale = await get(control, base, path, { 'user-agent': CHROME_UA, 'if-none-match': '"stale"' });
    t.equal(stale.status, 200, `${path}: 200 for another ETag`);
    const unNonced = (html: string) => html.replace(/ nonce="[^"]+"/g, '');
    t.equal(unNonced(stale.text), unNonced(first.text), `${path}: same cached body`);
  }

  clock.advance(2_000);
  const later = await get(control, control.urls.api, '/api/v1/providers');
  t.equal(later.headers.get('cache-control'), 'public, max-age=8', 'max-age counts down with the entry');
});

t.test('answers are rebuilt only after the TTL; a changed answer gets a new ETag', async (t) => {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, { now: clock.now, env: { SVC_CACHE_PROVIDERS_TTL_S: '10', SVC_TIERS_MIN_CALLS: '1' } });
  await addEndpoint(control, 'cached');
  const first = await get(control, control.urls.api, '/api/v1/providers');
  t.equal(first.body.providers[0].calls, 0);

  await ingest(control, [outcome({ endpoint_id: 'cached', at: NOW })]);
  clock.advance(9_000);
  const cached = await get(control, control.urls.api, '/api/v1/providers');
  t.equal(cached.body.providers[0].calls, 0, 'within the TTL: the cached answer');
  t.equal(cached.headers.get('etag'), first.headers.get('etag'));

  clock.advance(1_000);
  const fresh = await get(control, control.urls.api, '/api/v1/providers', { 'if-none-match': first.headers.get('etag')! });
  t.equal(fresh.status, 200, 'the old ETag no longer matches');
  t.equal(fresh.body.providers[0].calls, 1, 'after the TTL: rebuilt');
  t.not(fresh.headers.get('etag'), first.headers.get('etag'));
});

t.test('/activity reads the providers its filter may name once per TTL, like the page itself', async (t) => {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, { now: clock.now, env: { SVC_CACHE_STATS_TTL_S: '5' } });
  await addEndpoint(control, 'first');
  t.equal((await get(control, control.urls.indexer, '/activity', { 'user-agent': CHROME_UA })).status, 200);
  await addEndpoint(control, 'second', { display_name: 'Second' });
  const listed = (await get(control, control.urls.api, '/api/v1/providers')).body as {
    providers: { id: string; display_name: string | null }[];
  };
  const second = listed.providers.find((p) => p.display_name === 'Second')!.id;
  const filtered = `/activity?provider=${second}`;
  // Within the TTL a request answered from the cache reads nothing from the store: a provider
  // added meanwhile is not one yet, as it is not on the cached page either.
  const early = await get(control, control.urls.indexer, filtered, { 'user-agent': CHROME_UA, accept: 'application/json' });
  t.equal(early.status, 400, 'within the TTL: the cached providers');
  t.equal(early.body.code, 'svc_bad_request');
  clock.advance(5_000);
  t.equal((await get(control, control.urls.indexer, filtered, { 'user-agent': CHROME_UA })).status, 200, 'after the TTL: read again');
});

t.test('per-IP limit: 429 svc_rate_limited with Retry-After on both listeners', async (t) => {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, { now: clock.now, env: { SVC_LIMITS_PUBLIC_COUNT: '5', SVC_LIMITS_PUBLIC_WINDOW_S: '60' } });
  for (const base of [control.urls.api, control.urls.indexer]) {
    for (let i = 0; i < 5; i++) {
      const ok = await get(control, base, '/health');
      t.equal(ok.status, 200, `request ${i + 1} of 5 passes`);
    }
    const limited = await get(control, base, '/health');
    t.equal(limited.status, 429, 'the 6th is limited');
    t.equal(limited.body.code, 'svc_rate_limited');
    t.match(limited.headers.get('content-type'), /^application\/problem\+json/);
    t.equal(limited.headers.get('retry-after'), '12', 'Retry-After: one unit refills in 60/5 = 12 s');
    t.equal(limited.headers.get('ratelimit-policy'), '"ip";q=5;w=60', 'RateLimit-Policy names the policy');
    t.equal(limited.headers.get('ratelimit'), '"ip";r=0;t=12', 'RateLimit: nothing left for 12 s');
    t.equal(limited.headers.get('cache-control'), 'no-store');
  }
  // Refused User-Agents spend the budget too (the limit runs first), and refill with time.
  clock.advance(12_000);
  t.equal((await get(control, control.urls.api, '/health')).status, 200, 'one unit back after Retry-After');
  t.equal((await get(control, control.urls.api, '/health')).status, 429);
  clock.advance(60_000);
  const refused = await get(control, control.urls.api, '/api/v1/providers', { 'user-agent': 'curl/8.5.0' });
  t.equal(refused.status, 403, 'after a full window the bucket is full again');
});

t.test('If-None-Match parsing', async (t) => {
  t.ok(etagMatches('"a"', '"a"'));
  t.ok(etagMatches('*', '"a"'));
  t.ok(etagMatches('W/"a"', '"a"'));
  t.ok(etagMatches('"x", "a"', '"a"'));
  t.notOk(etagMatches('"ab"', '"a"'));
  t.notOk(etagMatches(undefined, '"a"'));
});

t.test('the limiter forgets full buckets and caps how many addresses it tracks', async (t) => {
  let now = 0;
  const limiter = new IpRateLimiter({ limit: { count: 2, windowS: 1 }, now: () => now, maxTracked: 3 });
  for (const ip of ['a', 'b', 'c']) t.ok(limiter.take(ip).allowed);
  t.equal(limiter.tracked, 3);
  t.ok(limiter.take('a').allowed, 'a second unit for a');
  t.notOk(limiter.take('a').allowed, 'a is out');
  now += 1_000; // every bucket is full again
  t.ok(limiter.take('d').allowed);
  t.equal(limiter.tracked, 1, 'over the cap: full buckets are dropped first');
  for (const ip of ['e', 'f', 'g']) limiter.take(ip);
  t.ok(limiter.tracked <= 3, `never more than the cap (${limiter.tracked})`);
  const refused = limiter.take('g');
  t.ok(refused.allowed, 'g had one unit left');
  const out = limiter.take('g');
  t.same(out, { allowed: false, remaining: 0, seconds: 1 }, 'refused with a whole-second wait');
});
