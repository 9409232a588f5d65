// A chunked body (no declared length) that grows past the limit: the upstream request is
// destroyed, the caller gets 413, and done() reports body_too_large exactly once.
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { ENGINES, type GatewayEngine, listen, settle, startGateway, waitFor } from './fixtures/harness.cts';

function connections(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('a streamed body over the limit is cut: 413 to the caller, upstream request destroyed', async (t) => {
    let upstreamBytes = 0;
    let upstreamCompleted = 0;
    const upstream = http.createServer((req, res) => {
      req.on('data', (c: Buffer) => (upstreamBytes += c.length));
      req.on('end', () => {
        upstreamCompleted++;
        res.end('{}');
      });
    });
    const upPort = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: upPort, bodyLimitBytes: 1024 });

    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: gw.port, method: 'POST', path: '/x', agent: false, headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      // Send 4 KiB in 512-byte chunks, slowly enough for the gateway to see them one by one.
      let sent = 0;
      const tick = setInterval(() => {
        if (sent >= 4096 || req.destroyed) {
          clearInterval(tick);
          req.end();
          return;
        }
        req.write(Buffer.alloc(512, 97));
        sent += 512;
      }, 5);
    });
    t.equal(answer.status, 413);
    t.equal(JSON.parse(answer.body).code, 'svc_payload_too_large');
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['body_too_large'],
    );
    t.same([...gw.doneCalls.values()], [1], 'done() fired once');
    t.same(
      [...gw.heads.values()].map((h) => [h.status, h.fromUpstream, h.callerFailure]),
      [[413, false, 'body_too_large']],
      'no response head from the upstream reached the caller; the 413 head names the caller failure',
    );
    t.equal(upstreamCompleted, 0, 'the upstream never saw a complete request');
    t.ok(upstreamBytes <= 1024 + 512, `the upstream got at most the limit plus one chunk (${upstreamBytes})`);
    await waitFor(async () => (await connections(upstream)) === 0, 'upstream connection closed');
  });

  t.test('a streamed body within the limit passes whole', async (t) => {
    let got = 0;
    const upstream = http.createServer((req, res) => {
      req.on('data', (c: Buffer) => (got += c.length));
      req.on('end', () => res.end('{}'));
    });
    const upPort = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: upPort, bodyLimitBytes: 1024 });
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: gw.port, method: 'POST', path: '/x', agent: false, headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(600, 97));
      req.end(Buffer.alloc(424, 97));
    });
    t.equal(status, 200);
    t.equal(got, 1024);
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      [null],
    );
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
