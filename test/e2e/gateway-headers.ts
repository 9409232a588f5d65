/**
 * Header hygiene through a real gateway process (docs/design.md §3.4, §3.7): what arrives upstream is
 * captured byte for byte; what the caller gets back is read from the wire.
 */
import t from 'tap';
import { GENEROUS_LIMITS, UUID_V7, rawRequest, request, startStack } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { ok, startCapture, startUpstream } from '../fixtures/upstream';

/** Header lines of the first request in `raw`, as [lower-case name, value]. */
function headerLines(raw: string): [string, string][] {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  return head
    .split('\r\n')
    .slice(1)
    .map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()] as [string, string];
    });
}

/** Milliseconds since the epoch carried by a UUIDv7. */
const uuidTime = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

for (const engine of ENGINES)
  t.test(`headers [${engine}]`, async (t) => {
    const stack = await startStack(t, { engine, controlEnv: GENEROUS_LIMITS });
    const capture = await startCapture(t);
    const up = await startUpstream(t);
    await stack.addEndpoint({ id: 'cap', upstream: `${capture.url}/in`, headers: { 'X-Upstream-Key': 'upstream-credential-123' } });
    const key = await stack.issueKey();
    await stack.applied(await stack.addEndpoint({ id: 'resp', upstream: `${up.url}/r` }));
    const gw = stack.gateway;
    const gwPort = Number(new URL(gw).port);

    await t.test('the caller’s credentials, hop-by-hop fields and forwarding claims never arrive upstream', async (t) => {
      const res = await rawRequest(
        gwPort,
        [
          'POST /v1/cap/h?x=1 HTTP/1.1',
          'Host: gateway.example',
          `Authorization: Bearer ${key.key}`,
          'Cookie: session=cookie-secret',
          'Proxy-Authorization: Basic cHJveHktc2VjcmV0',
          'Proxy-Connection: keep-alive',
          'TE: trailers',
          'Keep-Alive: timeout=5',
          'Connection: close, X-Hop-Secret',
          'X-Hop-Secret: hop-value',
          'X-Forwarded-For: 6.6.6.6',
          'X-Forwarded-Host: evil.example',
          'X-Forwarded-Proto: https',
          'Forwarded: for=6.6.6.6;host=evil.example',
          'X-Real-IP: 6.6.6.6',
          'X-Custom: keep-me',
          'Content-Type: application/json',
          'Content-Length: 7',
          '',
          '{"a":1}',
        ].join('\r\n'),
      );
      t.equal(res.status, 200, 'the call was admitted and answered');
      t.same(res.body, { captured: true });
      t.equal(capture.connections.length, 1, 'one upstream connection');
      const raw = capture.text();
      const lines = headerLines(raw);
      const names = lines.map(([n]) => n);
      t.match(raw, /^POST \/in\/h\?x=1 HTTP\/1\.1\r\n/, 'request line: base path + suffix + query');
      for (const gone of [
        'authorization',
        'cookie',
        'proxy-authorization',
        'proxy-connection',
        'te',
        'keep-alive',
        'x-hop-secret',
        'forwarded',
        'x-real-ip',
        'x-forwarded-host',
      ]) {
        t.notOk(names.includes(gone), `${gone} is not forwarded`);
      }
      for (const secret of [key.key, 'cookie-secret', 'cHJveHktc2VjcmV0', 'hop-value', '6.6.6.6', 'evil.example']) {
        t.notOk(raw.includes(secret), `${secret} appears nowhere upstream`);
      }
      t.same(
        lines.filter(([n]) => n === 'x-forwarded-for'),
        [['x-forwarded-for', '127.0.0.1']],
        'exactly one X-Forwarded-For: the socket address',
      );
      t.same(
        lines.filter(([n]) => n === 'x-forwarded-proto'),
        [['x-forwarded-proto', 'http']],
        'X-Forwarded-Proto set by the gateway',
      );
      t.same(
        lines.filter(([n]) => n === 'x-upstream-key'),
        [['x-upstream-key', 'upstream-credential-123']],
        'the endpoint’s injected header arrives',
      );
      t.same(
        lines.filter(([n]) => n === 'host'),
        [['host', `127.0.0.1:${capture.port}`]],
        'Host is the upstream’s',
      );
      t.same(
        lines.filter(([n]) => n === 'x-custom'),
        [['x-custom', 'keep-me']],
        'ordinary headers pass',
      );
      t.ok(raw.endsWith('\r\n\r\n{"a":1}'), 'the body arrives intact');
      t.notOk(res.text.includes('upstream-credential-123'), 'the injected credential is not sent back');
    });

    await t.test('a fake X-Forwarded-For is replaced by the socket address', async (t) => {
      up.clear();
      const res = await request(gw, '/resp/xff', { body: '{}', headers: { 'x-forwarded-for': '10.9.8.7, 6.6.6.6' } });
      t.equal(res.status, 200);
      t.equal(up.requests[0]?.headers['x-forwarded-for'], '127.0.0.1');
      t.notOk(
        up.requests[0]?.rawHeaders.some((v) => v.includes('10.9.8.7')),
        'the fake chain is dropped entirely',
      );
    });

    await t.test(
      'upstream Set-Cookie, Server, X-Powered-By, X-Svc-* and RateLimit* never reach the caller; the gateway’s own headers do',
      async (t) => {
        up.on(
          '/r/leaky',
          ok({
            headers: {
              'Set-Cookie': ['a=1; Path=/', 'b=2'],
              Server: 'upstream/9.9',
              'X-Powered-By': 'PHP/5.1',
              'X-Svc-Outcome': 'forged',
              'X-Svc-Call-Id': 'forged-id',
              'RateLimit-Policy': '"upstream";q=1000;w=60',
              RateLimit: '"upstream";r=999;t=60',
              'X-Upstream-Other': 'kept',
            },
          }),
        );
        up.on('/r/leaky-500', ok({ status: 500, body: { error: 'boom' }, headers: { 'X-Svc-Outcome': 'ok', Server: 'upstream/9.9' } }));

        const direct = await request(up.url, '/r/leaky', { body: '{}' });
        t.ok(direct.headers['set-cookie'] && direct.headers.server && direct.headers['x-powered-by'], 'the upstream does send them');

        const before = Date.now();
        const res = await request(gw, '/v1/resp/leaky', { body: '{}' });
        const after = Date.now();
        t.equal(res.status, 200);
        for (const gone of ['set-cookie', 'server', 'x-powered-by']) t.equal(res.headers[gone], undefined, `${gone} is not passed back`);
        t.equal(res.headers['x-upstream-other'], 'kept', 'other upstream headers are');
        const id = res.headers['x-svc-call-id'] as string;
        t.match(id, UUID_V7, 'X-Svc-Call-Id is a UUIDv7');
        t.ok(uuidTime(id) >= before - 1 && uuidTime(id) <= after + 1, 'its timestamp is the time of the call');
        t.equal(res.headers['x-svc-outcome'], 'ok', 'X-Svc-Outcome is the gateway’s, not the upstream’s');
        t.match(res.headers['x-svc-latency-ms'], /^\d+$/, 'X-Svc-Latency-Ms is an integer');
        t.equal(res.rawHeaders.filter((h) => h.toLowerCase() === 'x-svc-call-id').length, 1, 'one call id header');
        for (const name of ['ratelimit-policy', 'ratelimit']) {
          const values = res.rawHeaders.filter((_, i) => i % 2 === 1 && res.rawHeaders[i - 1]!.toLowerCase() === name);
          t.equal(values.length, 1, `one ${name} header`);
          t.notMatch(values[0], /upstream/, `${name} is the gateway's, not the upstream's`);
        }

        const failed = await request(gw, '/resp/leaky-500', { body: '{}' });
        t.equal(failed.status, 500);
        t.equal(failed.headers['x-svc-outcome'], 'server_error', 'an upstream cannot claim its 500 was ok');
        t.equal(failed.headers.server, undefined);

        const ids = new Set<string>([id, failed.headers['x-svc-call-id'] as string]);
        for (let i = 0; i < 3; i++) ids.add((await request(gw, '/resp/again', { body: '{}' })).headers['x-svc-call-id'] as string);
        t.equal(ids.size, 5, 'every call gets its own id');
        for (const each of ids) t.match(each, UUID_V7);
      },
    );
  });
