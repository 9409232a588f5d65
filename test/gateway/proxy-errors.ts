// Upstream failures before the response head: timeout → 504, refused → 502, reset → 502,
// each reported to done() exactly once with the right kind.
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { closedPort, ENGINES, type GatewayEngine, listen, request, settle, startGateway, waitFor } from './fixtures/harness.cts';

/** An upstream that accepts requests and never answers; counts open connections. */
async function silentUpstream(t: Test): Promise<{ port: number; server: http.Server; seen: () => number }> {
  let seen = 0;
  const server = http.createServer(() => {
    seen++;
  });
  const port = await listen(t, server);
  return { port, server, seen: () => seen };
}

function connections(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('upstream timeout answers 504 svc_upstream_timeout and frees the upstream socket', async (t) => {
    const up = await silentUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 150 });
    const res = await request(gw.port, { method: 'POST', path: '/slow', body: '{}' });
    t.equal(res.status, 504);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    const body = JSON.parse(res.body);
    t.equal(body.code, 'svc_upstream_timeout');
    t.equal(body.status, 504);
    t.equal(res.headers['x-svc-call-id'], '1', 'onHead headers are on the problem response');
    t.equal(up.seen(), 1, 'the upstream did receive the call');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['timeout', null, 504]],
    );
    t.ok(gw.results[0]!.upstreamLatencyMs >= 150, 'latency covers the whole wait');
    t.equal(gw.heads.get(1)?.fromUpstream, false);
    t.equal(gw.heads.get(1)?.networkError, 'timeout');
    t.same([...gw.doneCalls.values()], [1]);
    await waitFor(async () => (await connections(up.server)) === 0, 'upstream connection closed after timeout');
    t.same(gw.proxy.stats(), { inFlight: 0, sockets: 0, freeSockets: 0, queued: 0 });
  });

  t.test('an upstream trickling an endless head still times out at the deadline', { timeout: 10_000 }, async (t) => {
    // Bytes keep arriving, so the socket is never idle: only the per-call deadline can fire.
    const timers = new Set<NodeJS.Timeout>();
    const upstream = net.createServer((socket) => {
      // The gateway destroys this socket at its deadline; a write racing that is expected.
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\n');
        let n = 0;
        const timer = setInterval(() => socket.write(`X-Pad-${n++}: y\r\n`), 20);
        timers.add(timer);
        socket.on('close', () => clearInterval(timer));
      });
    });
    t.teardown(() => timers.forEach(clearInterval));
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 200 });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: '{}' });
    t.equal(res.status, 504);
    t.equal(JSON.parse(res.body).code, 'svc_upstream_timeout');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['timeout', null, 504]],
    );
  });

  t.test('connection refused answers 502 svc_upstream_unavailable', async (t) => {
    const gw = await startGateway(t, { engine, upstreamPort: await closedPort() });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: 'a' });
    t.equal(res.status, 502);
    t.equal(JSON.parse(res.body).code, 'svc_upstream_unavailable');
    t.match(JSON.parse(res.body).detail, /refused/);
    t.notMatch(res.body, /127\.0\.0\.1/, 'the upstream address is not leaked');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['refused', null, 502]],
    );
    t.same([...gw.doneCalls.values()], [1]);
  });

  t.test('a host name that does not resolve answers 502 and reports refused', async (t) => {
    // `.invalid` never resolves (RFC 6761): the call never had a connection, like a refused one.
    const gw = await startGateway(t, { engine, upstreamHost: 'upstream.invalid', upstreamPort: 80, timeoutMs: 5_000 });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: 'a' });
    t.equal(res.status, 502);
    t.equal(JSON.parse(res.body).code, 'svc_upstream_unavailable');
    t.notMatch(res.body, /upstream\.invalid/, 'the upstream host is not leaked');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['refused', null, 502]],
    );
  });

  t.test('reset before the response head answers 502 and reports reset', async (t) => {
    const upstream = net.createServer((socket) => {
      socket.once('data', () => socket.resetAndDestroy());
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: 'a' });
    t.equal(res.status, 502);
    t.equal(JSON.parse(res.body).code, 'svc_upstream_unavailable');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['reset', null, 502]],
    );
    t.same([...gw.doneCalls.values()], [1]);
  });

  t.test('upstream closing without an answer is a reset, not a timeout', async (t) => {
    const upstream = net.createServer((socket) => {
      socket.once('data', () => socket.end());
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 60_000 });
    const res = await request(gw.port, { method: 'GET', path: '/x' });
    t.equal(res.status, 502);
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['reset'],
    );
  });

  t.test('a stalled body after the head is an idle timeout: the caller connection is cut', { timeout: 10_000 }, async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 200 });
    const outcome = await new Promise<{ status: number; complete: boolean; body: string }>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/x', agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('error', () => undefined);
        res.on('close', () => resolve({ status: res.statusCode ?? 0, complete: res.complete, body }));
      });
      req.on('error', () => undefined);
      req.end();
    });
    t.equal(outcome.status, 200);
    t.equal(outcome.complete, false, 'the caller sees a truncated response, not a hang');
    t.equal(outcome.body, 'partial');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['timeout', 200, 200]],
    );
    t.same([...gw.doneCalls.values()], [1]);
  });

  t.test('a body that keeps coming is not idle: chunks closer than the timeout, a whole longer than it', { timeout: 10_000 }, async (t) => {
    const chunks = 8;
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(chunks) });
      let sent = 0;
      const tick = setInterval(() => {
        res.write('c');
        if (++sent === chunks) {
          clearInterval(tick);
          res.end();
        }
      }, 100);
      res.on('close', () => clearInterval(tick));
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream), timeoutMs: 400 });
    const started = Date.now();
    const res = await request(gw.port, { method: 'GET', path: '/trickle' });
    t.equal(res.status, 200);
    t.equal(res.body, 'c'.repeat(chunks), 'the whole body, though it took longer than the timeout');
    t.ok(Date.now() - started >= 400, 'the body took longer than timeout_ms in all');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [[null, 200, 200]],
    );
  });

  t.test('a caller that stops reading is not the provider’s idle timeout: the whole body arrives later', { timeout: 10_000 }, async (t) => {
    // The upstream sends its body at once; the caller pauses longer than the endpoint timeout
    // before reading it. The gateway stops reading the upstream meanwhile (backpressure): that
    // pause is the caller's, so the provider's idle timeout must not cut the call.
    const body = Buffer.alloc(16 * 1024 * 1024, 'b');
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      res.end(body);
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream), timeoutMs: 200 });
    const got = await new Promise<{ status: number; bytes: number; complete: boolean }>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/big', agent: false }, (res) => {
        let bytes = 0;
        res.pause();
        setTimeout(() => {
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.resume();
        }, 800);
        res.on('error', () => undefined);
        res.on('close', () => resolve({ status: res.statusCode ?? 0, bytes, complete: res.complete }));
      });
      req.on('error', () => undefined);
      req.end();
    });
    t.same(got, { status: 200, bytes: body.length, complete: true }, 'the caller got the whole body');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [[null, 200, 200]],
    );
  });

  t.test('every failure kind reports done() exactly once, across many calls', async (t) => {
    const silent = await silentUpstream(t);
    const reset = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    const resetPort = await listen(t, reset);
    const ok = http.createServer((_req, res) => res.end('ok'));
    const okPort = await listen(t, ok);
    const gateways = [
      await startGateway(t, { engine, upstreamPort: silent.port, timeoutMs: 50 }),
      await startGateway(t, { engine, upstreamPort: await closedPort() }),
      await startGateway(t, { engine, upstreamPort: resetPort }),
      await startGateway(t, { engine, upstreamPort: okPort }),
    ];
    const expected = ['timeout', 'refused', 'reset', null];
    for (const gw of gateways) {
      await Promise.all(Array.from({ length: 20 }, () => request(gw.port, { method: 'POST', path: '/x', body: 'b' })));
    }
    for (const gw of gateways) await settle(gw);
    gateways.forEach((gw, i) => {
      t.equal(gw.forwarded, 20);
      t.equal(gw.doneCalls.size, 20, `${expected[i]}: one result per call`);
      t.ok(
        [...gw.doneCalls.values()].every((n) => n === 1),
        `${expected[i]}: never twice`,
      );
      t.ok(
        gw.results.every((r) => r.networkError === expected[i]),
        `${expected[i]}: right kind`,
      );
      t.equal(gw.proxy.stats().inFlight, 0);
    });
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
