// Client aborts and upstream aborts: nothing may be left holding a socket, a queue slot or
// the caller's connection.
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ENGINES, type GatewayEngine, listen, request, settle, startGateway, waitFor } from './fixtures/harness.cts';

interface LeakReport {
  total: number;
  forwarded: number;
  doneCalls: number;
  calledTwice: number;
  kinds: Record<string, number>;
  upstreamConnections: number;
  stats: { inFlight: number; sockets: number; freeSockets: number; queued: number };
  maxFreeSockets: number;
  heapGrowth: number;
}

function runLeakChild(engine: GatewayEngine): Promise<LeakReport> {
  // The same TypeScript loader tap uses, plus --expose-gc for heap figures.
  const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'));
  const child = spawn(process.execPath, [...loader, '--expose-gc', join(__dirname, 'fixtures', 'abort-leak.cts')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '', TAP: '', SVC_ABORT_LEAK_CHILD: '1', SVC_ABORT_LEAK_ENGINE: engine },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve, reject) => {
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`leak child exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as LeakReport);
    });
  });
}

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('5,000 aborted calls against a slow upstream leave no sockets, queue entries or heap behind', async (t) => {
    const report = await runLeakChild(engine);
    t.equal(report.forwarded, report.total);
    t.equal(report.doneCalls, report.total, 'done() once per call');
    t.equal(report.calledTwice, 0);
    t.same(report.kinds, { client_abort: report.total });
    t.equal(report.stats.inFlight, 0);
    t.equal(report.stats.sockets, 0, 'no upstream socket still busy with an abandoned call');
    t.equal(report.stats.queued, 0, 'no abandoned call waiting in the agent queue');
    t.ok(report.stats.freeSockets <= report.maxFreeSockets);
    t.ok(report.upstreamConnections <= report.stats.freeSockets, 'the upstream holds only pooled idle sockets');
    // Plain http-proxy 1.18.1 grows ~50 MB here (every abandoned request stays queued).
    t.ok(report.heapGrowth < 16 * 1024 * 1024, `heap growth ${report.heapGrowth} bytes`);
  });

  t.test('upstream RST mid-body cuts the caller connection; the gateway keeps serving', { timeout: 10_000 }, async (t) => {
    const upstream = net.createServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n0123456789', () => {
          setImmediate(() => socket.resetAndDestroy());
        });
      });
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port });
    const seen = await new Promise<{ status: number; complete: boolean; body: string; socketClosed: boolean }>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'POST', path: '/x', agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('error', () => undefined);
        res.on('close', () => {
          resolve({ status: res.statusCode ?? 0, complete: res.complete, body, socketClosed: res.socket?.destroyed ?? true });
        });
      });
      req.on('error', () => undefined);
      req.end('{}');
    });
    t.equal(seen.status, 200);
    t.equal(seen.complete, false, 'the caller is not told the truncated body is complete');
    t.equal(seen.body, '0123456789');
    t.equal(seen.socketClosed, true);
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['reset', 200, 200]],
    );

    // Still serving: the next call is answered (502 from the now-closed upstream is fine).
    upstream.removeAllListeners('connection');
    upstream.on('connection', (socket: net.Socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 204 No Content\r\n\r\n'));
    });
    const next = await request(gw.port, { method: 'POST', path: '/x', body: '{}' });
    t.equal(next.status, 204);
    t.same([...gw.doneCalls.values()], [1, 1]);
  });

  t.test('upstream RST mid-chunked-body cuts the caller connection', { timeout: 10_000 }, async (t) => {
    const upstream = net.createServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n', () => {
          setImmediate(() => socket.resetAndDestroy());
        });
      });
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port });
    const complete = await new Promise<boolean>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/x', agent: false }, (res) => {
        res.resume();
        res.on('error', () => undefined);
        res.on('close', () => resolve(res.complete));
      });
      req.on('error', () => resolve(false));
      req.end();
    });
    t.equal(complete, false);
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['reset'],
    );
  });

  t.test('a caller leaving mid-response destroys the upstream response', { timeout: 10_000 }, async (t) => {
    let upstreamClosed = false;
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk');
      res.on('close', () => (upstreamClosed = true));
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 60_000 });
    await new Promise<void>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/x', agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
    });
    await waitFor(() => upstreamClosed, 'upstream response closed');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status]),
      [['client_abort', 200]],
    );
    t.same(gw.proxy.stats(), { inFlight: 0, sockets: 0, freeSockets: 0, queued: 0 });
  });

  t.test('a caller leaving while its call waits in the agent queue never reaches the upstream', async (t) => {
    let upstreamRequests = 0;
    const held: http.ServerResponse[] = [];
    const upstream = http.createServer((_req, res) => {
      upstreamRequests++;
      held.push(res);
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, maxSockets: 1, timeoutMs: 60_000 });
    const first = request(gw.port, { method: 'POST', path: '/first', body: 'a' });
    await waitFor(() => upstreamRequests === 1, 'first call upstream');
    const queued = net.connect(gw.port, '127.0.0.1');
    queued.on('error', () => undefined);
    queued.write('POST /queued HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\n\r\nb');
    await waitFor(() => gw.proxy.stats().queued === 1, 'second call queued');
    queued.destroy();
    await waitFor(() => gw.results.length === 1, 'queued call reported');
    t.same(
      gw.results.map((r) => r.networkError),
      ['client_abort'],
    );
    held[0]!.end('done');
    const answer = await first;
    t.equal(answer.body, 'done');
    await settle(gw);
    t.equal(upstreamRequests, 1, 'the abandoned call was never sent upstream');
    t.same(gw.proxy.stats().queued, 0);
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
