// The happy path: bodies and paths arrive unchanged, redirects are passed back (never
// followed), sockets are pooled and bounded, the head hook sees every answer.
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import {
  closedPort,
  ENGINES,
  type GatewayEngine,
  listen,
  rawExchange,
  request,
  settle,
  startGateway,
  waitFor,
} from './fixtures/harness.cts';

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('a large streamed body goes up and comes back byte for byte', async (t) => {
    const payload = randomBytes(1024 * 1024);
    let upstreamHash = '';
    const upstream = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        upstreamHash = sha(body);
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(body);
      });
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const echoed = await new Promise<Buffer>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'POST', path: '/echo', agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      });
      req.on('error', reject);
      // Written in pieces without a length: a chunked request body.
      for (let i = 0; i < payload.length; i += 64 * 1024) req.write(payload.subarray(i, i + 64 * 1024));
      req.end();
    });
    t.equal(upstreamHash, sha(payload), 'upstream got the exact body');
    t.equal(sha(echoed), sha(payload), 'caller got the exact answer');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [[null, 200, 200]],
    );
  });

  t.test('the last chunk of a sized body is held until the body observer has run', async (t) => {
    // The observer is where the outcome record is journaled: a caller must not hold the whole
    // answer before that, or a crash in between loses a call the caller saw complete.
    const first = Buffer.alloc(4096, 'a');
    const last = Buffer.alloc(1000, 'z');
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(first.length + last.length) });
      res.write(first);
      setTimeout(() => res.end(last), 50); // the scenario: the rest of the answer comes later
    });
    let writtenAtEnd = -1;
    const gw = await startGateway(t, {
      engine,
      upstreamPort: await listen(t, upstream),
      onHead: (head) => {
        head.body = {
          end: (release) => {
            writtenAtEnd = gw.sockets[0]!.bytesWritten;
            setTimeout(() => release(null), 20); // e.g. a journal write gathered with others
          },
        };
      },
    });
    const res = await request(gw.port, { method: 'POST', path: '/sized', body: '{}' });
    t.equal(res.body, first.toString() + last.toString(), 'the caller got the whole body');
    const total = gw.sockets[0]!.bytesWritten;
    t.ok(writtenAtEnd > first.length, 'the head and the first chunk were sent before the body ended');
    t.equal(total - writtenAtEnd, last.length, 'exactly the last chunk was sent after the observer ran');
  });

  t.test('the provider’s idle timeout stops with the upstream body: a slow body observer is not a timeout', async (t) => {
    // The idle timeout between body chunks is the call's own timer on every engine; the wait for
    // the observer (the journal write) after the upstream body ended is not the provider's.
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '4' });
      res.end('done');
    });
    const gw = await startGateway(t, {
      engine,
      upstreamPort: await listen(t, upstream),
      timeoutMs: 50,
      onHead: (head) => {
        head.body = { end: (release) => setTimeout(() => release(null), 200) };
      },
    });
    const res = await request(gw.port, { method: 'POST', path: '/slow-observer', body: '{}' });
    t.equal(res.status, 200);
    t.equal(res.body, 'done', 'the caller got the whole body');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [[null, 200, 200]],
    );
    await waitFor(() => gw.proxy.stats().freeSockets === 1, 'the upstream connection idle in the pool');
    t.equal(gw.proxy.stats().sockets, 0, 'the upstream connection went back to the pool');
  });

  t.test('the upstream path and query are sent exactly as given', async (t) => {
    const seen: string[] = [];
    const upstream = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end();
    });
    const paths = [
      '/v1/models/gemini-pro:generateContent',
      '/a;b=c/%7Euser/%E2%82%AC/x.y',
      '/search?q=a+b&redirect=http://evil.example//x?y=1',
      '/trailing/',
      '/',
    ];
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    for (const path of paths) await request(gw.port, { method: 'GET', path });
    t.same(seen, paths);
  });

  t.test('redirects are passed back, never followed', async (t) => {
    let calls = 0;
    const upstream = http.createServer((req, res) => {
      calls++;
      res.writeHead(302, { location: `http://127.0.0.1:1/elsewhere${req.url}` });
      res.end();
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const res = await request(gw.port, { method: 'POST', path: '/go', body: 'x' });
    t.equal(res.status, 302);
    t.equal(res.headers.location, 'http://127.0.0.1:1/elsewhere/go');
    t.equal(calls, 1);
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status]),
      [[null, 302]],
    );
  });

  t.test('the head hook sees upstream answers and its headers reach the caller', async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.writeHead(201, { 'x-upstream': 'yes' });
      res.end('created');
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: '{}' });
    t.equal(res.status, 201);
    t.equal(res.body, 'created');
    t.equal(res.headers['x-upstream'], 'yes');
    t.equal(res.headers['x-svc-call-id'], '1');
    const head = gw.heads.get(1)!;
    t.equal(head.status, 201);
    t.equal(head.fromUpstream, true);
    t.equal(head.networkError, null);
    t.ok(head.upstreamLatencyMs >= 0);
    await settle(gw);
    t.equal(gw.results[0]!.upstreamLatencyMs, head.upstreamLatencyMs, 'done reports the latency to the head');
  });

  t.test('HEAD, 204 and 304 answers complete without a body', async (t) => {
    const upstream = http.createServer((req, res) => {
      if (req.url === '/head') res.writeHead(200, { 'content-length': '5' }).end();
      else if (req.url === '/204') res.writeHead(204).end();
      else res.writeHead(304, { etag: '"v1"' }).end();
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const head = await request(gw.port, { method: 'HEAD', path: '/head' });
    t.same([head.status, head.headers['content-length'], head.body], [200, '5', '']);
    t.equal((await request(gw.port, { method: 'GET', path: '/204' })).status, 204);
    const notModified = await request(gw.port, { method: 'GET', path: '/304' });
    t.same([notModified.status, notModified.headers.etag], [304, '"v1"']);
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      [null, null, null],
    );
  });

  t.test('informational 1xx answers before the final one are not passed on', async (t) => {
    const upstream = net.createServer((socket) => {
      socket.once('data', () => {
        // Unasked (the gateway never sends Expect), and with a head split across two reads.
        socket.write('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 10');
        setTimeout(() => {
          socket.write('0 Continue\r\n\r\n');
          setTimeout(() => socket.end('HTTP/1.1 201 Created\r\nContent-Length: 4\r\nConnection: close\r\n\r\ndone'), 20);
        }, 20);
      });
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const res = await rawExchange(gw.port, 'POST /x HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}');
    t.match(res, /^HTTP\/1\.1 201 Created\r\n/, 'the caller sees the final answer first');
    t.notMatch(res, /Early Hints|100 Continue|style\.css/, 'no informational answer reaches the caller');
    t.ok(res.endsWith('\r\n\r\ndone'));
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status]),
      [[null, 201]],
    );
  });

  t.test('sockets are pooled (keep-alive) and bounded by maxSockets', async (t) => {
    const connections = new Set<net.Socket>();
    let peak = 0;
    const held: http.ServerResponse[] = [];
    const upstream = http.createServer((req, res) => {
      connections.add(req.socket);
      if (req.url === '/hold') held.push(res);
      else res.end('ok');
    });
    upstream.on('connection', () => {
      upstream.getConnections((_e, n) => (peak = Math.max(peak, n)));
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream), maxSockets: 2 });
    for (let i = 0; i < 10; i++) await request(gw.port, { method: 'POST', path: '/quick', body: 'x' });
    t.equal(connections.size, 1, 'ten sequential calls share one upstream connection');

    const pending = Array.from({ length: 5 }, () => request(gw.port, { method: 'POST', path: '/hold', body: 'x' }));
    await waitFor(() => held.length === 2 && gw.proxy.stats().queued === 3, 'two calls upstream, three queued');
    t.same(gw.proxy.stats(), { inFlight: 5, sockets: 2, freeSockets: 0, queued: 3 });
    let released = 0;
    while (released < 5) {
      await waitFor(() => held.length > 0, 'a held call reaches the upstream');
      for (const res of held.splice(0)) {
        res.end('released');
        released++;
      }
    }
    const answers = await Promise.all(pending);
    t.same(
      answers.map((a) => a.body),
      Array(5).fill('released'),
    );
    t.ok(peak <= 2, `at most two upstream connections at once (saw ${peak})`);
  });

  t.test('Expect: 100-continue is answered by the gateway and not forwarded', async (t) => {
    let upstreamExpect: string | undefined = 'unset';
    const upstream = http.createServer((req, res) => {
      upstreamExpect = req.headers.expect;
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const gw = await startGateway(t, { engine, upstreamPort: await listen(t, upstream) });
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: gw.port,
          method: 'POST',
          path: '/x',
          agent: false,
          headers: { expect: '100-continue', 'content-length': '2' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('continue', () => req.end('hi'));
      req.on('error', reject);
    });
    t.equal(status, 200);
    t.equal(upstreamExpect, undefined);
  });

  t.test('a throwing head hook is a gateway fault: 500, reported once, upstream released', async (t) => {
    let upstreamClosed = 0;
    const upstream = http.createServer((_req, res) => {
      res.on('close', () => upstreamClosed++);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('streaming');
    });
    const gw = await startGateway(t, {
      engine,
      upstreamPort: await listen(t, upstream),
      onHead: () => {
        throw new Error('journal refused the record');
      },
    });
    const res = await request(gw.port, { method: 'POST', path: '/x', body: '{}' });
    t.equal(res.status, 500);
    t.equal(JSON.parse(res.body).code, 'svc_internal');
    t.notMatch(res.body, /journal refused/, 'the fault is not echoed');
    await waitFor(() => upstreamClosed === 1, 'upstream response destroyed');
    await settle(gw);
    t.equal(gw.results.length, 1);
    t.match(gw.results[0], { networkError: null, sentStatus: 500, status: 200 });
    t.match(String(gw.results[0]!.internalError), /journal refused/);

    const down = await startGateway(t, {
      engine,
      upstreamPort: await closedPort(),
      onHead: () => {
        throw new Error('hook failed on a 502');
      },
    });
    const failed = await request(down.port, { method: 'POST', path: '/x', body: '{}' });
    t.equal(failed.status, 500);
    await settle(gw);
    t.same(
      down.results.map((r) => [r.networkError, r.sentStatus]),
      [[null, 500]],
    );
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
