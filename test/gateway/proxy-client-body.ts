// The two clocks of a call: the caller's (the longest pause between request-body chunks,
// `clientBodyTimeoutMs`) and the provider's (the endpoint timeout, from the moment the last
// request byte was handed upstream). A slow or stalled caller must never be blamed on the
// provider: before the provider's clock started at the request head, a body that stalled
// past the endpoint timeout came back as 504 `svc_upstream_timeout` (a refunded
// network_error). Nor is the caller's stall reported as the provider's latency: a caller
// error carries what the provider spent (0 when it never had the whole request), where it
// used to carry the whole time since the call started (`X-Svc-Latency-Ms: 2001` on a 408).
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { ENGINES, type GatewayEngine, listen, rawExchange, settle, startGateway, waitFor } from './fixtures/harness.cts';

/** An upstream that answers 200 once the whole body arrived, and counts complete bodies. */
async function echoUpstream(t: Parameters<typeof listen>[0]): Promise<{ port: number; completed: () => number; received: () => number }> {
  let completed = 0;
  let received = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (received += c.length));
    req.on('end', () => {
      completed++;
      res.end('{"ok":true}');
    });
  });
  const port = await listen(t, server);
  return { port, completed: () => completed, received: () => received };
}

function head(path: string, headers: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: gw\r\n${headers}\r\n`;
}

/** Write `bytes` one at a time, `everyMs` apart, then leave the socket open. */
function trickle(socket: net.Socket, bytes: string, everyMs: number): Promise<void> {
  return new Promise((resolve) => {
    let i = 0;
    const tick = setInterval(() => {
      if (i >= bytes.length || socket.destroyed) {
        clearInterval(tick);
        resolve();
        return;
      }
      socket.write(bytes[i++]!);
    }, everyMs);
  });
}

/** Open a raw connection, send `start`, run `then`, and collect the answer until the gateway closes it. */
function exchange(
  port: number,
  start: string,
  then: (socket: net.Socket) => Promise<void> | void = () => {},
): Promise<{ text: string; closedByGateway: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('end', () => {
      socket.destroy();
      resolve({ text, closedByGateway: true });
    });
    socket.on('error', reject);
    socket.write(start);
    void then(socket);
  });
}

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const bodyOf = (text: string): any => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  t.test('a declared length that never completes is the caller’s 408, not the provider’s 504', async (t) => {
    const up = await echoUpstream(t);
    // The endpoint timeout is shorter than the caller's allowance: only the caller's clock may end this call.
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 150, clientBodyTimeoutMs: 500 });
    const answer = await exchange(gw.port, head('/x', 'Content-Length: 100\r\n') + '0123456789');
    t.equal(statusOf(answer.text), 408, answer.text);
    t.match(answer.text, /\r\ncontent-type: application\/problem\+json\r\n/i);
    t.match(answer.text, /\r\nconnection: close\r\n/i, 'the gateway announces the close');
    t.equal(bodyOf(answer.text).code, 'svc_request_timeout');
    t.ok(answer.closedByGateway, 'the gateway closed the connection');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.status, r.sentStatus]),
      [['client_timeout', null, 408]],
    );
    t.same(
      [...gw.heads.values()].map((h) => [h.status, h.fromUpstream, h.callerFailure, h.networkError]),
      [[408, false, 'client_timeout', null]],
    );
    t.equal(
      [...gw.heads.values()][0]?.upstreamLatencyMs,
      0,
      'the 408 head carries no provider latency: the upstream never had the request',
    );
    t.equal(gw.results[0]?.upstreamLatencyMs, 0, 'nor does the result: the caller’s stall is not the provider’s latency');
    t.equal(up.completed(), 0, 'the upstream never saw a complete request');
    await waitFor(() => gw.proxy.stats().inFlight === 0 && gw.proxy.stats().sockets === 0, 'upstream request destroyed');
  });

  t.test('a trickled body that keeps coming is forwarded whole, and the provider is timed from its end', async (t) => {
    const up = await echoUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 150, clientBodyTimeoutMs: 500 });
    const body = 'abcdefghijklmnopqrst'; // 20 bytes, 40 ms apart: ~800 ms, far past the endpoint timeout
    const answer = await exchange(gw.port, head('/x', `Content-Length: ${body.length}\r\nConnection: close\r\n`), (s) =>
      trickle(s, body, 40),
    );
    t.equal(statusOf(answer.text), 200, answer.text);
    await settle(gw);
    const [result] = gw.results;
    t.equal(result?.networkError, null);
    t.equal(result?.status, 200);
    t.ok(result!.upstreamLatencyMs < 150, `the provider's clock excludes the caller's trickle (${result?.upstreamLatencyMs} ms)`);
    t.equal(up.received(), body.length, 'the whole body reached the upstream');
  });

  t.test('a caller that leaves mid-body is a caller error with no provider latency', async (t) => {
    const up = await echoUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 5_000, clientBodyTimeoutMs: 60_000 });
    const socket = net.connect(gw.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(head('/x', 'Content-Length: 100\r\n') + '0123456789');
    await waitFor(() => gw.forwarded === 1, 'call forwarded');
    // The caller keeps the call waiting for its body a while, then leaves: the wait is the scenario (a slow caller).
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    await waitFor(() => gw.results.length === 1, 'call reported');
    t.same(
      gw.results.map((r) => [r.networkError, r.sentStatus, r.upstreamLatencyMs]),
      [['client_abort', null, 0]],
      'the time the caller held the call is not the provider’s',
    );
  });

  t.test('a caller that leaves mid-answer keeps the provider’s latency at the head', async (t) => {
    const upstream = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk');
    });
    const port = await listen(t, upstream);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 60_000 });
    await new Promise<void>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/x', agent: false }, (res) => {
        // The caller reads a while after the head, then leaves: the pause is the scenario (a slow reader).
        res.once('data', () =>
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 100),
        );
      });
      req.on('error', () => undefined);
      req.end();
    });
    await waitFor(() => gw.results.length === 1, 'call reported');
    const [result] = gw.results;
    t.equal(result?.networkError, 'client_abort');
    t.equal(
      result?.upstreamLatencyMs,
      [...gw.heads.values()][0]?.upstreamLatencyMs,
      'the latency is the provider’s clock at its head, not the time the caller spent reading',
    );
  });

  t.test('a body trickled slower than clientBodyTimeoutMs is 408', async (t) => {
    const up = await echoUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 5_000, clientBodyTimeoutMs: 150 });
    let stop = false;
    const answer = await exchange(gw.port, head('/x', 'Content-Length: 50\r\n'), async (s) => {
      for (let i = 0; i < 50 && !stop && !s.destroyed; i++) {
        s.write('x');
        // The scenario: a caller slower than clientBodyTimeoutMs between bytes.
        await new Promise((r) => setTimeout(r, 400));
      }
    });
    stop = true;
    t.equal(statusOf(answer.text), 408, answer.text);
    t.equal(bodyOf(answer.text).code, 'svc_request_timeout');
    await settle(gw);
    t.same(
      gw.results.map((r) => [r.networkError, r.upstreamLatencyMs]),
      [['client_timeout', 0]],
    );
    t.equal(up.completed(), 0);
  });

  t.test('a chunked body that stops mid-stream is 408', async (t) => {
    const up = await echoUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port, timeoutMs: 100, clientBodyTimeoutMs: 300 });
    const answer = await rawExchange(gw.port, head('/x', 'Transfer-Encoding: chunked\r\n') + '5\r\nhello\r\n');
    t.equal(statusOf(answer), 408, answer);
    t.equal(bodyOf(answer).code, 'svc_request_timeout');
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['client_timeout'],
    );
  });

  t.test('an upstream that stops reading the body runs the provider’s clock, not the caller’s', async (t) => {
    // Accepts and never reads: the gateway's writes back up and it stops reading the caller.
    const sockets: net.Socket[] = [];
    const sink = net.createServer((s) => {
      sockets.push(s);
      s.pause();
    });
    const port = await listen(t, sink);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 400, clientBodyTimeoutMs: 100 });
    const answer = await new Promise<{ status: number; code: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'POST', path: '/x', agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, code: JSON.parse(text).code }));
      });
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      req.end(Buffer.alloc(64 * 1024 * 1024, 120));
    });
    t.same(answer, { status: 504, code: 'svc_upstream_timeout' }, 'held back by the upstream past its timeout: the provider’s 504');
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['timeout'],
    );
    t.ok(sockets.length >= 1, 'the upstream was reached');
  });

  t.test('a bodyless request starts the provider’s clock at once', async (t) => {
    const hang = http.createServer(() => {});
    const port = await listen(t, hang);
    const gw = await startGateway(t, { engine, upstreamPort: port, timeoutMs: 150, clientBodyTimeoutMs: 60_000 });
    const answer = await rawExchange(gw.port, 'GET /x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n');
    t.equal(statusOf(answer), 504, 'no body to wait for: the endpoint timeout applies as before');
    t.equal(bodyOf(answer).code, 'svc_upstream_timeout');
    await settle(gw);
    t.same(
      gw.results.map((r) => r.networkError),
      ['timeout'],
    );
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
