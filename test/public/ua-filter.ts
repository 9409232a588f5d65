/**
 * The User-Agent allow-list on {api_url}: real browser UAs and the SDK pass; command-line
 * clients, server runtimes, empty and unknown UAs get 403 `svc_forbidden_user_agent` with a
 * body that says how to resend. The indexer has no filter; `/health` is exempt by default.
 */
import t from 'tap';
import { startTestControl } from '../fixtures/control';
import { CHROME_UA, SDK_UA } from '../fixtures/public';
import { UserAgentFilter } from '../../control/public/ua-filter';
import { ConfigError, loadConfig } from '../../config/load';

/** [User-Agent, allowed?, what it is] */
const CASES: [string, boolean, string][] = [
  // Browsers (desktop and mobile), real strings.
  [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
    true,
    'Chrome on Windows',
  ],
  [
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36',
    true,
    'Chrome on macOS',
  ],
  ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36', true, 'Chrome on Linux'],
  ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0', true, 'Firefox on Windows'],
  ['Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0', true, 'Firefox on Ubuntu'],
  ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14.4; rv:125.0) Gecko/20100101 Firefox/125.0', true, 'Firefox on macOS'],
  [
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15',
    true,
    'Safari on macOS',
  ],
  [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51',
    true,
    'Edge on Windows',
  ],
  [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/109.0.0.0',
    true,
    'Opera',
  ],
  [
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1',
    true,
    'Safari on iPhone',
  ],
  [
    'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    true,
    'Safari on iPad',
  ],
  [
    'Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36',
    true,
    'Chrome on Android',
  ],
  [
    'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36',
    true,
    'Samsung Internet',
  ],
  ['Mozilla/5.0 (Android 14; Mobile; rv:125.0) Gecko/125.0 Firefox/125.0', true, 'Firefox on Android'],
  [
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1',
    true,
    'Chrome on iOS',
  ],
  [
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36',
    true,
    'headless Chromium',
  ],
  ['Mozilla/5.0 (Windows NT 10.0; Trident/7.0; rv:11.0) like Gecko', true, 'Internet Explorer 11'],
  // The SDK.
  ['svc-monitor-sdk/0.1.0', true, 'the SDK'],
  ['svc-monitor-sdk/1.12.3-beta.2', true, 'the SDK, prerelease'],
  ['svc-monitor-sdk/0.1.0 node/20.11.1', true, 'the SDK naming its runtime after its own token'],
  // Command-line clients.
  ['curl/8.5.0', false, 'curl'],
  ['curl/7.81.0', false, 'curl (Ubuntu 22.04)'],
  ['Wget/1.21.4', false, 'Wget'],
  ['HTTPie/3.2.2', false, 'HTTPie'],
  ['python-requests/2.31.0', false, 'python-requests'],
  ['Python-urllib/3.11', false, 'Python-urllib'],
  ['Python/3.11 aiohttp/3.9.5', false, 'aiohttp'],
  ['python-httpx/0.27.0', false, 'httpx'],
  ['Go-http-client/1.1', false, 'Go net/http'],
  ['Go-http-client/2.0', false, 'Go net/http over HTTP/2'],
  ['okhttp/4.12.0', false, 'OkHttp'],
  ['Java/17.0.10', false, 'Java HttpURLConnection'],
  ['Java-http-client/21.0.2', false, 'java.net.http'],
  ['Apache-HttpClient/4.5.14 (Java/17.0.8)', false, 'Apache HttpClient'],
  ['libwww-perl/6.76', false, 'libwww-perl'],
  ['PostmanRuntime/7.37.3', false, 'Postman'],
  ['insomnia/8.6.1', false, 'Insomnia'],
  ['Ruby', false, 'Ruby Net::HTTP'],
  ['GuzzleHttp/7', false, 'Guzzle'],
  ['Dart/3.3 (dart:io)', false, 'Dart'],
  ['ApacheBench/2.3', false, 'ab'],
  ['Scrapy/2.11.1 (+https://scrapy.org)', false, 'Scrapy'],
  // Server runtimes.
  ['node', false, 'Node fetch (undici default)'],
  ['undici', false, 'undici request'],
  ['node-fetch/1.0 (+https://github.com/bitinn/node-fetch)', false, 'node-fetch v2'],
  ['node-fetch', false, 'node-fetch v3'],
  ['axios/1.6.8', false, 'axios'],
  ['got (https://github.com/sindresorhus/got)', false, 'got'],
  ['node-superagent/3.8.3', false, 'superagent'],
  ['Deno/1.42.4', false, 'Deno'],
  ['Bun/1.1.4', false, 'Bun'],
  // Empty, spoofed and unknown.
  ['', false, 'empty'],
  ['   ', false, 'blank'],
  ['Mozilla/5.0 (compatible; curl/8.5.0)', false, 'browser-shaped, but curl'],
  [
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36 axios/1.6.8',
    false,
    'browser-shaped, but axios',
  ],
  ['Mozilla/5.0', false, 'no platform, no engine'],
  ['svc-monitor-sdk', false, 'the SDK without a version'],
  ['svc-monitor-sdk/latest', false, 'the SDK without a semver'],
  ['my-monitor/1.0.0', false, 'an unknown product'],
  ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', false, 'a crawler without an engine token'],
];

t.test('allow-list decisions on real User-Agent strings', async (t) => {
  t.ok(CASES.length >= 30, `${CASES.length} cases`);
  const filter = new UserAgentFilter('browser,svc-monitor-sdk', '/health');
  for (const [ua, allowed, what] of CASES) {
    const verdict = filter.check(ua);
    t.equal(verdict.allowed, allowed, `${what}: ${allowed ? 'allowed' : 'refused'} (${JSON.stringify(ua)})`);
  }
  t.equal(filter.check(undefined).allowed, false, 'no User-Agent header at all');
});

t.test('the allow-list is configuration', async (t) => {
  const sdkOnly = new UserAgentFilter('svc-monitor-sdk', 'none');
  t.notOk(sdkOnly.check(CHROME_UA).allowed, 'browsers can be switched off');
  t.ok(sdkOnly.check(SDK_UA).allowed);
  const extra = new UserAgentFilter('browser,svc-monitor-sdk,acme-dashboard', 'none');
  t.ok(extra.check('acme-dashboard/2.0.1').allowed, 'another product can be allowed');
  t.notOk(extra.check('acme-dashboard/2').allowed, 'still only with a semver');
});

t.test('over HTTP: 403 problem with how to resend; browsers and the SDK reach every route', async (t) => {
  const control = await startTestControl(t);
  const api = control.urls.api;
  for (const [ua, allowed, what] of CASES) {
    const headers: Record<string, string> = ua === '' ? {} : { 'user-agent': ua };
    const res = await control.request(`${api}/api/v1/providers`, { headers });
    if (allowed) {
      t.equal(res.status, 200, `${what}: 200`);
      continue;
    }
    t.equal(res.status, 403, `${what}: 403`);
    t.match(res.headers.get('content-type'), /^application\/problem\+json/);
    t.equal(res.body.code, 'svc_forbidden_user_agent');
    t.match(res.body.detail, /send User-Agent: svc-monitor-sdk\/0\.1\.0 or open it in a web browser/, 'says how to resend');
    t.same(res.body.allowed_user_agents, ['a web browser', 'svc-monitor-sdk/<semver>']);
  }

  // fetch() sends "node" unless told otherwise: refused, and the detail names the client.
  const node = await fetch(`${api}/api/v1/status`);
  t.equal(node.status, 403);
  t.match(((await node.json()) as { detail: string }).detail, /node is a server runtime HTTP client/);

  for (const path of ['/status', '/api/v1/status', '/api/v1/changelog', '/api/v1/providers']) {
    const res = await control.request(api + path, { headers: { 'user-agent': CHROME_UA } });
    t.equal(res.status, 200, `a browser gets ${path}`);
    t.equal((await control.request(api + path, { headers: { 'user-agent': 'curl/8.5.0' } })).status, 403, `curl does not get ${path}`);
  }
  const unknownPath = await control.request(`${api}/apply-not-here`, { headers: { 'user-agent': CHROME_UA } });
  t.equal(unknownPath.status, 404, 'a browser passes the filter to the router (404 for an unknown path)');
  t.equal(
    (await control.request(`${api}/apply`, { headers: { 'user-agent': 'curl/8.5.0' } })).status,
    403,
    'the filter runs before any route, /apply included',
  );

  const health = await control.request(`${api}/health`, { headers: { 'user-agent': 'curl/8.5.0' } });
  t.equal(health.status, 200, '/health is exempt by default (probes)');
  t.equal(health.text, '{"status":"ok","version":"v1"}');

  for (const path of ['/health', '/api/stats', '/api/activity']) {
    const res = await control.request(control.urls.indexer + path, { headers: { 'user-agent': 'curl/8.5.0' } });
    t.equal(res.status, 200, `indexer ${path}: no User-Agent filter`);
  }
});

t.test('exempt paths are configuration', async (t) => {
  const control = await startTestControl(t, { env: { SVC_PUBLIC_USER_AGENT_EXEMPT_PATHS: 'none' } });
  const res = await control.request(`${control.urls.api}/health`, { headers: { 'user-agent': 'curl/8.5.0' } });
  t.equal(res.status, 403, 'with none, /health is filtered too');
  t.equal(res.body.code, 'svc_forbidden_user_agent');
});

t.test('the public.* User-Agent settings are validated at start-up', async (t) => {
  t.equal(
    loadConfig({ env: { SVC_PUBLIC_USER_AGENT_ALLOW: 'svc-monitor-sdk,acme-dashboard' } }).public.userAgentAllow,
    'svc-monitor-sdk,acme-dashboard',
  );
  t.throws(() => loadConfig({ env: { SVC_PUBLIC_USER_AGENT_ALLOW: 'curl/*' } }), ConfigError, 'a pattern is not a product name');
  t.throws(() => loadConfig({ env: { SVC_PUBLIC_USER_AGENT_EXEMPT_PATHS: 'health' } }), ConfigError, 'paths start with /');
  t.throws(() => loadConfig({ env: { SVC_PUBLIC_ACTIVITY_PAGE_SIZE: '500' } }), ConfigError, 'page size above the max page size');
  try {
    loadConfig({ env: { SVC_PUBLIC_USER_AGENT_ALLOW: 'curl/*' } });
  } catch (err) {
    t.match(
      (err as Error).message,
      /public\.userAgentAllow \(from env SVC_PUBLIC_USER_AGENT_ALLOW\)/,
      'the message names the key and its source',
    );
  }
});
