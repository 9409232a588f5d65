// Routing and path-escape defence (docs/design.md §3.1).
import t from 'tap';
import { checkSuffix, joinUpstreamPath, parseRoute } from '../../gateway/request/route';

/** The upstream path the handler sends for `/ep` + `tail`: `parseRoute`, then `joinUpstreamPath`; null when refused. */
function upstreamPath(base: URL, tail: string): string | null {
  const route = parseRoute(`/ep${tail}`);
  return route.ok ? joinUpstreamPath(base, route.suffix, route.query) : null;
}

t.test('both path forms name the same route', async (t) => {
  const cases: [string, string, string, string][] = [
    ['/ep', 'ep', '', ''],
    ['/ep/', 'ep', '/', ''],
    ['/ep/chat/completions', 'ep', '/chat/completions', ''],
    ['/v1/ep/chat/completions', 'ep', '/chat/completions', ''],
    ['/v1/ep', 'ep', '', ''],
    ['/v1/ep?x=1', 'ep', '', '?x=1'],
    ['/ep/a?b=c&d=e', 'ep', '/a', '?b=c&d=e'],
    ['/my_api-2/x', 'my_api-2', '/x', ''],
    ['/ep/models/gemini-pro:generateContent', 'ep', '/models/gemini-pro:generateContent', ''],
    ['/ep/projects:list', 'ep', '/projects:list', ''],
    ['/ep/a%20b/%E2%82%AC', 'ep', '/a%20b/%E2%82%AC', ''],
    ['/ep/a.b/c..d/.../x.', 'ep', '/a.b/c..d/.../x.', ''],
    ['/ep/a;b=c/~user/a+b', 'ep', '/a;b=c/~user/a+b', ''],
    ['/ep/x?redirect=http://evil.example//y', 'ep', '/x', '?redirect=http://evil.example//y'],
    ['/ep/x?a=%2f..%5c', 'ep', '/x', '?a=%2f..%5c'],
    ['/ep/x?', 'ep', '/x', '?'],
    ['/ep/a%2520b', 'ep', '/a%2520b', ''],
  ];
  for (const [url, endpointId, suffix, query] of cases) {
    t.same(parseRoute(url), { ok: true, endpointId, suffix, query }, url);
  }
});

t.test('reserved and impossible first segments are not endpoints', async (t) => {
  const cases = [
    '/',
    '/v1',
    '/v1/',
    '/health',
    '/health/x',
    '/metrics',
    '/metrics/x',
    '/_admin/v1/keys',
    '/_sync/v1/stream',
    '/_x',
    '/v1/v1/x',
    '/v1/health',
    '/v1/_admin',
    '/EP/x',
    '/%61pi/x',
    '/-ep/x',
    `/${'a'.repeat(64)}/x`,
  ];
  for (const url of cases) {
    const result = parseRoute(url);
    t.equal(result.ok, false, url);
    if (!result.ok) t.equal(result.code, 'svc_unknown_endpoint', url);
  }
});

// Every one of these must be refused with 400, whichever path form it arrives in.
const ATTACKS: string[] = [
  '/ep/../x',
  '/ep/..',
  '/ep/a/../../x',
  '/ep/./x',
  '/ep/%2e%2e/x',
  '/ep/%2E%2E/x',
  '/ep/.%2e/x',
  '/ep/%2e./x',
  '/ep/%2e/x',
  '/ep/%252e%252e/x',
  '/ep/%25252e%25252e/x',
  '/ep/%2525252e%2525252e/x',
  '/ep/a%2fb',
  '/ep/a%2Fb',
  '/ep/..%2fx',
  '/ep/%2f%2fevil.example',
  '/ep/a%252fb',
  '/ep/a%5cb',
  '/ep/a%5C..%5Cb',
  '/ep/a\\b',
  '/ep/..\\x',
  '/ep//evil.example/x',
  '/ep/a//b',
  '//evil.example/x',
  '/v1//evil.example',
  '/ep/@evil.example',
  '/ep/a%40evil.example',
  '/ep/http://evil.example',
  '/ep/http:/evil.example',
  '/ep/a/https:/evil.example',
  '/ep/http:evil.example',
  '/ep/HTTPS:evil.example',
  '/ep/javascript:alert(1)',
  '/ep/file:/etc/passwd',
  '/ep/https:%2f%2fevil.example',
  '/ep/http%3a%2f%2fevil.example',
  '/ep/x/foohttp:/bar',
  'http://evil.example/ep/x',
  'https://evil.example/v1/ep/x',
  '*',
  'ep/x',
  '',
  '/ep/a%00b',
  '/ep/a\u0000b',
  '/ep/a%0d%0aHost:%20evil',
  '/ep/a\r\nb',
  '/ep/a%09b',
  '/ep/a b',
  '/ep/%7f',
  '/ep/%c2%85',
  '/ep/a%zz',
  '/ep/a%',
  '/ep/%u002e%u002e',
  '/ep/%c0%ae%c0%ae/x',
  '/ep/ä',
  '/ep/..;/x',
  '/ep/%2e%2e;jsessionid=1/x',
  '/ep/%ef%bc%8e%ef%bc%8e/x',
  '/ep/%e2%80%a5/x',
  '/ep/x?a=1\r\nb',
  '/ep/x?a=\u0000',
  '/ep/x?a b',
  '/ep/x#fragment',
  '/ep/x?a=1#fragment',
];

t.test(`${ATTACKS.length} escape attempts are refused with svc_bad_request`, async (t) => {
  t.ok(ATTACKS.length >= 30);
  for (const url of ATTACKS) {
    for (const form of url.startsWith('/ep/') ? [url, '/v1' + url] : [url]) {
      const result = parseRoute(form);
      t.equal(result.ok, false, JSON.stringify(form));
      if (!result.ok) t.equal(result.code, 'svc_bad_request', JSON.stringify(form));
    }
  }
});

t.test('the upstream path refuses every escaping suffix whatever the base', async (t) => {
  const bases = [new URL('https://api.example/'), new URL('https://api.example/v1/base'), new URL('https://api.example/v1/base/')];
  for (const url of ATTACKS) {
    if (!url.startsWith('/ep/')) continue;
    const raw = url.slice(3);
    for (const base of bases) t.equal(upstreamPath(base, raw), null, `${base.pathname} + ${JSON.stringify(raw)}`);
  }
});

t.test('the upstream path joins the base path and the raw suffix', async (t) => {
  const cases: [string, string, string, string][] = [
    ['https://api.example', '', '', '/'],
    ['https://api.example/', '/', '', '/'],
    ['https://api.example/', '/chat', '?x=1', '/chat?x=1'],
    ['https://api.example/v1', '', '', '/v1'],
    ['https://api.example/v1', '/', '', '/v1/'],
    ['https://api.example/v1', '/chat/completions', '', '/v1/chat/completions'],
    ['https://api.example/v1/', '/chat', '', '/v1/chat'],
    ['https://api.example/v1/', '', '?q', '/v1/?q'],
    ['https://api.example/a%20b', '/c%2Bd', '?e=%2f', '/a%20b/c%2Bd?e=%2f'],
    ['https://api.example:8443/base', '/x', '', '/base/x'],
  ];
  for (const [base, suffix, query, expected] of cases) {
    t.equal(upstreamPath(new URL(base), suffix + query), expected, `${base} + ${suffix}${query}`);
  }
});

t.test('the upstream path ignores host-like text in the suffix: the host is the base URL only', async (t) => {
  const path = upstreamPath(new URL('https://api.example/base'), '/evil.example/x');
  t.equal(path, '/base/evil.example/x');
  t.equal(joinUpstreamPath(new URL('https://api.example/base'), 'x', ''), null, 'a suffix must start with /');
});

t.test('checkSuffix names the reason', async (t) => {
  t.equal(checkSuffix(''), null);
  t.equal(checkSuffix('/a/b'), null);
  t.match(checkSuffix('/a/../b'), /dot segment/);
  t.match(checkSuffix('/a%2fb'), /encoded slash/);
  t.match(checkSuffix('/a//b'), /empty segment/);
  t.match(checkSuffix('/%2525252525252e'), /too many times/);
  t.match(checkSuffix('/a%zz'), /malformed/);
});
