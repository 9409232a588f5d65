// Header hygiene as pure functions over rawHeaders.
import t from 'tap';
import {
  clientResponseHeaders,
  connectionTokens,
  headerListObject,
  headerListValue,
  upstreamRequestHeaders,
} from '../../gateway/proxy/headers';

const OPTS = { clientAddress: '203.0.113.7', proto: 'https' as const, host: 'api.example:8443' };

const plain = (h: object): Record<string, unknown> => ({ ...h });

t.test('request: credentials, hop-by-hop, proxy and forwarding headers are dropped', async (t) => {
  const raw = [
    'Host',
    'gateway.example',
    'Authorization',
    'Bearer svc_beta_secret',
    'Cookie',
    'a=b',
    'Proxy-Authorization',
    'Basic x',
    'Proxy-Connection',
    'keep-alive',
    'Proxy-Anything',
    'x',
    'Connection',
    'keep-alive, X-Named',
    'Keep-Alive',
    'timeout=5',
    'TE',
    'trailers',
    'Trailer',
    'X-Checksum',
    'Upgrade',
    'websocket',
    'X-Named',
    'hop',
    'X-Forwarded-For',
    '6.6.6.6',
    'X-Forwarded-Host',
    'evil',
    'x-forwarded-proto',
    'http',
    'Forwarded',
    'for=6.6.6.6',
    'X-Real-IP',
    '6.6.6.6',
    'True-Client-IP',
    '6.6.6.6',
    'Expect',
    '100-continue',
    'HTTP2-Settings',
    'AAA',
    'Content-Type',
    'application/json',
    'Content-Length',
    '7',
    'User-Agent',
    'agent/1.0',
    'Accept',
    'application/json',
  ];
  t.same(plain(upstreamRequestHeaders(raw, OPTS)), {
    'content-type': 'application/json',
    'content-length': '7',
    'user-agent': 'agent/1.0',
    accept: 'application/json',
    host: 'api.example:8443',
    'x-forwarded-for': '203.0.113.7',
    'x-forwarded-proto': 'https',
  });
});

t.test('request: header names are matched case-insensitively', async (t) => {
  const raw = ['AUTHORIZATION', 'x', 'cOoKiE', 'y', 'connection', 'X-A', 'x-a', '1', 'X-B', '2'];
  t.same(plain(upstreamRequestHeaders(raw, OPTS)), {
    'x-b': '2',
    host: 'api.example:8443',
    'x-forwarded-for': '203.0.113.7',
    'x-forwarded-proto': 'https',
  });
});

t.test('request: injected headers override the caller’s', async (t) => {
  const raw = ['X-Api-Key', 'caller', 'Authorization', 'Bearer caller'];
  const out = upstreamRequestHeaders(raw, { ...OPTS, inject: { 'X-Api-Key': 'endpoint', Authorization: 'Bearer endpoint' } });
  t.equal(out['x-api-key'], 'endpoint');
  t.equal(out['authorization'], 'Bearer endpoint');
});

t.test('request: a chunked body is re-framed as chunked; Content-Length survives Connection', async (t) => {
  const chunked = upstreamRequestHeaders(['Transfer-Encoding', 'chunked'], OPTS);
  t.equal(chunked['transfer-encoding'], 'chunked');
  const named = upstreamRequestHeaders(['Connection', 'content-length, close', 'Content-Length', '12'], OPTS);
  t.equal(named['content-length'], '12');
  const none = upstreamRequestHeaders(['Accept', '*/*'], OPTS);
  t.equal(none['transfer-encoding'], undefined);
  t.equal(none['content-length'], undefined);
});

t.test('request: repeated fields stay repeated', async (t) => {
  const out = upstreamRequestHeaders(['Accept', 'a', 'accept', 'b', 'X-Multi', '1', 'X-Multi', '2', 'X-Multi', '3'], OPTS);
  t.same(out['accept'], ['a', 'b']);
  t.same(out['x-multi'], ['1', '2', '3']);
});

t.test('request: a header named __proto__ cannot change the object', async (t) => {
  const out = upstreamRequestHeaders(['__proto__', 'x', 'constructor', 'y', 'toString', 'z'], OPTS);
  const proto = Object.getPrototypeOf(out) as object;
  t.equal(Object.getPrototypeOf(proto), null, 'no Object.prototype in the chain');
  t.same(Object.keys(proto), []);
  t.equal(Object.prototype.hasOwnProperty.call(out, '__proto__'), true, '__proto__ is a plain field');
  t.equal(out['constructor'], 'y');
  t.equal(out['tostring'], 'z');
});

t.test('response: Set-Cookie, Server, X-Powered-By, hop-by-hop, X-Svc-* and upstream RateLimit are dropped', async (t) => {
  const raw = [
    'Set-Cookie',
    'a=1',
    'set-cookie',
    'b=2',
    'Server',
    'nginx',
    'X-Powered-By',
    'PHP',
    'Connection',
    'close, X-Internal',
    'X-Internal',
    'secret',
    'Keep-Alive',
    'timeout=5',
    'Transfer-Encoding',
    'chunked',
    'Trailer',
    'X-Sum',
    'Upgrade',
    'h2c',
    'Proxy-Authenticate',
    'Basic',
    'Proxy-Status',
    'x',
    'Alt-Svc',
    'h3=":443"',
    'X-Svc-Outcome',
    'ok',
    'X-Svc-Call-Id',
    'spoofed',
    'RateLimit-Policy',
    '"upstream";q=1000;w=60',
    'RateLimit',
    '"upstream";r=999;t=60',
    'Content-Type',
    'text/plain',
    'Content-Length',
    '3',
    'Cache-Control',
    'no-store',
    'Link',
    '<a>',
    'Link',
    '<b>',
  ];
  const list = clientResponseHeaders(raw);
  t.same(
    list,
    ['content-type', 'text/plain', 'content-length', '3', 'cache-control', 'no-store', 'link', '<a>', 'link', '<b>'],
    'a flat list, repeats in order',
  );
  t.equal(headerListValue(list, 'link'), '<a>,<b>');
  t.equal(headerListValue(list, 'server'), undefined);
  t.same(plain(headerListObject(list)), {
    'content-type': 'text/plain',
    'content-length': '3',
    'cache-control': 'no-store',
    link: ['<a>', '<b>'],
  });
});

t.test('response: Content-Length survives a Connection nomination', async (t) => {
  t.same(clientResponseHeaders(['Connection', 'Content-Length', 'Content-Length', '5']), ['content-length', '5']);
});

t.test('connectionTokens reads every Connection field', async (t) => {
  t.equal(connectionTokens(['Accept', '*/*']), null);
  t.equal(connectionTokens(['Connection', 'keep-alive', 'Connection', 'Close']), null, 'the common values name nothing to strip');
  t.same([...connectionTokens(['Connection', ' Keep-Alive ,X-A,, ', 'connection', 'x-b, Content-Length'])!], ['x-a', 'x-b']);
});
