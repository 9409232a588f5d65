// Header hygiene on the wire: the exact bytes an upstream receives and a caller receives.
import t, { type Test } from 'tap';
import net from 'node:net';
import { ENGINES, type GatewayEngine, listen, rawExchange, settle, startGateway } from './fixtures/harness.cts';

const CALLER_KEY = 'svc_beta_3yQk7LmN2pR8sT4vW6xZ9aB1cD5eF7gH';

/** A raw upstream: records every byte it receives, answers each request with `answer`. */
async function rawUpstream(t: Test, answer: string): Promise<{ port: number; bytes: () => string }> {
  let bytes = '';
  const server = net.createServer((socket) => {
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.toString('latin1');
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.slice(end + 4 + length);
      socket.write(answer);
    });
  });
  const port = await listen(t, server);
  return { port, bytes: () => bytes };
}

/** Header lines of a raw HTTP message, lower-cased names. */
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

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('the upstream never receives caller credentials, hop-by-hop or Connection-named headers', async (t) => {
    const up = await rawUpstream(t, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    const gw = await startGateway(t, { engine, upstreamPort: up.port, inject: { 'X-Api-Key': 'upstream-credential' } });
    const body = '{"q":1}';
    const answer = await rawExchange(
      gw.port,
      [
        'POST /v1/ep/chat?x=1 HTTP/1.1',
        'Host: gateway.example',
        `Authorization: Bearer ${CALLER_KEY}`,
        'Cookie: session=caller-cookie',
        'Proxy-Authorization: Basic cHJveHk6c2VjcmV0',
        'Proxy-Connection: keep-alive',
        'TE: trailers',
        'Keep-Alive: timeout=999',
        'Connection: keep-alive, X-Hop-Secret, x-other-hop',
        'X-Hop-Secret: must-not-pass',
        'X-Other-Hop: must-not-pass-either',
        'X-Forwarded-For: 6.6.6.6',
        'X-Forwarded-Host: evil.example',
        'X-Forwarded-Proto: https',
        'Forwarded: for=6.6.6.6;proto=https',
        'X-Real-IP: 6.6.6.6',
        'X-Api-Key: caller-supplied',
        'X-Custom: keep-me',
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        '',
        body,
      ].join('\r\n'),
      (received) => received.includes('\r\n\r\nok'),
    );
    t.match(answer, /^HTTP\/1\.1 200 /);
    const raw = up.bytes();
    const lines = headerLines(raw);
    const names = lines.map(([name]) => name);
    for (const forbidden of [
      'authorization',
      'cookie',
      'proxy-authorization',
      'proxy-connection',
      'te',
      'keep-alive',
      'x-hop-secret',
      'x-other-hop',
      'forwarded',
      'x-forwarded-host',
      'x-real-ip',
      'trailer',
      'upgrade',
    ]) {
      t.notOk(names.includes(forbidden), `${forbidden} is not forwarded`);
    }
    for (const secret of [
      CALLER_KEY,
      'caller-cookie',
      'cHJveHk6c2VjcmV0',
      'must-not-pass',
      '6.6.6.6',
      'evil.example',
      'timeout=999',
      'caller-supplied',
    ]) {
      t.notOk(raw.includes(secret), `${secret} appears nowhere upstream`);
    }
    const value = (name: string): string[] => lines.filter(([n]) => n === name).map(([, v]) => v);
    t.same(value('host'), [`127.0.0.1:${up.port}`]);
    t.same(value('x-forwarded-for'), ['127.0.0.1']);
    t.same(value('x-forwarded-proto'), ['http']);
    t.same(value('x-api-key'), ['upstream-credential'], 'the injected header wins');
    t.same(value('x-custom'), ['keep-me']);
    t.same(value('content-length'), [String(body.length)]);
    t.match(raw, /^POST \/v1\/ep\/chat\?x=1 HTTP\/1\.1\r\n/);
    t.ok(raw.endsWith(`\r\n\r\n${body}`), 'the body arrives unchanged');
  });

  t.test('an endpoint credential replaces the caller Authorization', async (t) => {
    const up = await rawUpstream(t, 'HTTP/1.1 204 No Content\r\n\r\n');
    const gw = await startGateway(t, { engine, upstreamPort: up.port, inject: { Authorization: 'Bearer upstream-token' } });
    await rawExchange(gw.port, `GET /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${CALLER_KEY}\r\nConnection: close\r\n\r\n`);
    const auth = headerLines(up.bytes()).filter(([n]) => n === 'authorization');
    t.same(auth, [['authorization', 'Bearer upstream-token']]);
    t.notOk(up.bytes().includes(CALLER_KEY));
  });

  t.test('the caller never receives Set-Cookie, Server, X-Powered-By or upstream hop-by-hop headers', async (t) => {
    const upstreamAnswer = [
      'HTTP/1.1 200 OK',
      'Server: nginx/1.2.3-upstream',
      'X-Powered-By: Express-upstream',
      'Set-Cookie: upstream_session=abc; Path=/',
      'Set-Cookie: second=def',
      'Connection: keep-alive, X-Resp-Hop',
      'X-Resp-Hop: internal-routing-value',
      'Keep-Alive: timeout=777',
      'Proxy-Authenticate: Basic realm="upstream-proxy"',
      'Alt-Svc: h3=":443"; ma=86400',
      'X-Svc-Outcome: ok-spoofed',
      'Vary: Accept',
      'Vary: Accept-Encoding',
      'X-Request-Id: abc123',
      'Content-Type: application/json',
      'Content-Length: 11',
      '',
      '{"ok":true}',
    ].join('\r\n');
    const up = await rawUpstream(t, upstreamAnswer);
    const gw = await startGateway(t, { engine, upstreamPort: up.port });
    const answer = await rawExchange(gw.port, 'POST /x HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    const lines = headerLines(answer);
    const names = lines.map(([name]) => name);
    for (const forbidden of ['server', 'x-powered-by', 'set-cookie', 'x-resp-hop', 'proxy-authenticate', 'alt-svc', 'transfer-encoding']) {
      t.notOk(names.includes(forbidden), `${forbidden} is not passed back`);
    }
    for (const leaked of [
      'nginx',
      'Express-upstream',
      'upstream_session',
      'internal-routing-value',
      'timeout=777',
      'upstream-proxy',
      'ok-spoofed',
    ]) {
      t.notOk(answer.includes(leaked), `${leaked} appears nowhere in the answer`);
    }
    t.same(
      lines.filter(([n]) => n === 'vary').map(([, v]) => v),
      ['Accept', 'Accept-Encoding'],
      'repeated fields stay repeated',
    );
    t.same(
      lines.filter(([n]) => n === 'x-request-id').map(([, v]) => v),
      ['abc123'],
    );
    t.same(
      lines.filter(([n]) => n === 'x-svc-call-id').map(([, v]) => v),
      ['1'],
      'the gateway adds its own headers',
    );
    t.ok(answer.endsWith('\r\n\r\n{"ok":true}'));
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status]),
      [[null, 200]],
    );
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
