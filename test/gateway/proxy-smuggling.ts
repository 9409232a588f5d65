// Request smuggling through http-proxy's deleteLength pass (node-http-proxy #1721): a chunked
// DELETE/OPTIONS body must reach the upstream as a body, never as a second request.
import t, { type Test } from 'tap';
import http from 'node:http';
import net from 'node:net';
import { ENGINES, type GatewayEngine, listen, rawExchange, settle, startGateway, waitFor } from './fixtures/harness.cts';

const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: upstream\r\n\r\n';

interface CountingUpstream {
  port: number;
  requests: { method: string; url: string; body: string }[];
  closedConnections: () => number;
}

/** An http upstream that records every request it parses (and its body). */
async function countingUpstream(t: Test): Promise<CountingUpstream> {
  const requests: CountingUpstream['requests'] = [];
  let closed = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('latin1')));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', body });
      res.end('answered');
    });
  });
  server.on('connection', (socket: net.Socket) => socket.on('close', () => closed++));
  const port = await listen(t, server);
  return { port, requests, closedConnections: () => closed };
}

function chunkedRequest(method: string): string {
  return (
    `${method} /resource HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
    `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`
  );
}

t.test('the counting upstream does see a smuggled request when one is sent', async (t) => {
  // What http-proxy 1.18.1 emits for a chunked DELETE: Content-Length 0, then the raw body.
  const up = await countingUpstream(t);
  await rawExchange(
    up.port,
    `DELETE /resource HTTP/1.1\r\nHost: upstream\r\nContent-Length: 0\r\n\r\n${SMUGGLED}`,
    (r) => r.split('answered').length === 3,
  );
  t.same(
    up.requests.map((r) => `${r.method} ${r.url}`),
    ['DELETE /resource', 'GET /smuggled'],
  );
});

/** The cases, run once per engine. */
function cases(t: Test, engine: GatewayEngine): void {
  for (const method of ['DELETE', 'OPTIONS', 'GET', 'POST']) {
    t.test(`${method} with a chunked body reaches the upstream as exactly one request`, async (t) => {
      const up = await countingUpstream(t);
      const gw = await startGateway(t, { engine, upstreamPort: up.port });
      const answer = await rawExchange(gw.port, chunkedRequest(method));
      t.match(answer, /^HTTP\/1\.1 200 /);
      t.match(answer, /answered$/);
      await settle(gw);
      t.same(
        gw.results.map((r) => r.networkError),
        [null],
      );
      // Close the pooled upstream socket so the upstream has parsed every byte it was sent.
      gw.proxy.close();
      await waitFor(() => up.closedConnections() === 1, 'upstream connection closed');
      t.equal(up.requests.length, 1, 'exactly one request upstream');
      t.same(up.requests[0], { method, url: '/resource', body: SMUGGLED }, 'the smuggled bytes arrive as the body');
    });
  }

  t.test('Connection: content-length cannot strip the length of a DELETE body', async (t) => {
    const up = await countingUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port });
    const answer = await rawExchange(
      gw.port,
      `DELETE /resource HTTP/1.1\r\nHost: gateway\r\nConnection: close, content-length\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`,
    );
    t.match(answer, /^HTTP\/1\.1 200 /);
    gw.proxy.close();
    await waitFor(() => up.closedConnections() === 1, 'upstream connection closed');
    t.same(up.requests, [{ method: 'DELETE', url: '/resource', body: SMUGGLED }]);
  });

  t.test('a chunked body followed by a pipelined request stays two separate calls', async (t) => {
    const up = await countingUpstream(t);
    const gw = await startGateway(t, { engine, upstreamPort: up.port });
    const pipelined =
      `OPTIONS /first HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` +
      `POST /second HTTP/1.1\r\nHost: gateway\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`;
    await rawExchange(gw.port, pipelined);
    gw.proxy.close();
    await waitFor(() => up.requests.length >= 2 && up.closedConnections() >= 1, 'both calls upstream');
    t.same(up.requests, [
      { method: 'OPTIONS', url: '/first', body: 'abc' },
      { method: 'POST', url: '/second', body: 'hi' },
    ]);
  });
}

for (const engine of ENGINES) t.test(engine, async (t) => cases(t, engine));
