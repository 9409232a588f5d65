/**
 * `SyncPoster`, the gateway's hand-written HTTP/1.1 client for its acks: a POST carries the
 * sync token and JSON and resolves with the status; one kept-alive connection carries request
 * after request, and up to `maxConnections` carry concurrent ones; every way an answer's body
 * may end (length, chunks, the close) is read; 1xx heads are skipped; a reused connection the
 * server closed is retried once on a new one; a bad answer, a refused connection or `close()`
 * rejects; requests follow `ControlEndpoints` to the next control. Limits (the response
 * timeout, the keyed bounded queue) and TLS are in `sync-post-limits.ts`.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { ControlEndpoints } from '../../gateway/control-link/sync-http';
import { SyncPoster, SyncPostClosedError } from '../../gateway/control-link/sync-post';
import { ok, rawControl as raw } from '../fixtures/raw-control';
import { waitFor } from '../fixtures/stack';

t.setTimeout(60_000);

function poster(t: Test, url: string | string[], maxConnections?: number) {
  const p = new SyncPoster(new ControlEndpoints(Array.isArray(url) ? url : [url]), 'Bearer sync-token-123', { maxConnections });
  t.teardown(() => p.close());
  return p;
}

t.test('POSTs go on one kept-alive connection to a node server, with the token and the JSON', async (t) => {
  const seen: { url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url!, headers: req.headers, body });
      res.writeHead(body.includes('"bad"') ? 409 : 200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  t.teardown(() => server.closeAllConnections());
  const p = poster(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}/base/`);
  t.equal(await p.post('/_sync/v1/ack', '{"version":1,"gateway":"é"}'), 200);
  t.equal(await p.post('/_sync/v1/ack', '{"bad":true}'), 409, 'another status is an answer, not an error');
  t.equal(await p.post('/_sync/v1/ack?x=1', '{}'), 200);
  t.equal(connections, 1, 'one connection for all three');
  t.equal(seen[0]!.url, '/_sync/v1/ack');
  t.equal(seen[2]!.url, '/_sync/v1/ack?x=1');
  t.equal(seen[0]!.headers.authorization, 'Bearer sync-token-123');
  t.equal(seen[0]!.headers['content-type'], 'application/json');
  t.equal(seen[0]!.headers['content-length'], String(Buffer.byteLength('{"version":1,"gateway":"é"}')));
  t.equal(seen[0]!.body, '{"version":1,"gateway":"é"}', 'the body as UTF-8');
});

t.test('concurrent POSTs use up to maxConnections connections, the rest wait their turn', async (t) => {
  const held: net.Socket[] = [];
  const s = await raw(t, (_req, socket) => held.push(socket));
  const p = poster(t, s.url, 2);
  const answers = Array.from({ length: 5 }, (_, i) => p.post('/a', `{"i":${i}}`, `k${i}`));
  for (let i = 0; i < 5; i++) {
    // i answered, so i + 2 sent: a third connection would have taken one more.
    const sent = Math.min(i + 2, 5);
    await waitFor(() => s.state.requests.length === sent && held.length === sent - i, `${sent} requests sent`);
    held.shift()!.write(ok());
  }
  t.same(await Promise.all(answers), [200, 200, 200, 200, 200]);
  t.same(
    s.state.requests.map((r) => r.body),
    [0, 1, 2, 3, 4].map((i) => `{"i":${i}}`),
    'in order',
  );
  t.equal(s.state.connections, 2, 'no third connection');
});

t.test('every way an answer may end is read', async (t) => {
  const answers = [
    'HTTP/1.1 100 Continue\r\n\r\n' + ok(),
    'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n1\r\n!\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n',
    'HTTP/1.1 204 No Content\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    'HTTP/1.0 201 Created\r\n\r\nuntil the close',
    ok('{}', 'Connection: keep-alive\r\n'),
  ];
  const s = await raw(t, (_req, socket) => {
    const answer = answers.shift()!;
    // Byte by byte: every split of an answer across reads.
    for (let i = 0; i < answer.length; i++) socket.write(answer[i]!);
    if (answer.includes('close') || answer.startsWith('HTTP/1.0')) socket.end();
  });
  const p = poster(t, s.url);
  const statuses = [];
  for (let i = 0; i < 7; i++) statuses.push(await p.post('/a', '{}'));
  t.same(statuses, [200, 202, 200, 204, 200, 201, 200]);
  t.equal(s.state.connections, 3, 'a new connection after each answer that closes it');
});

t.test('a bad answer rejects the POST and the next one goes on a new connection', async (t) => {
  const answers = [
    'HTTP/2 200\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ok('{}') + 'extra',
    'HTTP/1.1 200 OK\r\n' + 'X: y\r\n'.repeat(20_000),
    ok(),
  ];
  const s = await raw(t, (_req, socket) => socket.write(answers.shift()!));
  const p = poster(t, s.url);
  await t.rejects(p.post('/a', '{}'), { code: 'SVC_ERR_SYNC_POST_ANSWER', message: /not an HTTP\/1.1 answer/ });
  await t.rejects(p.post('/a', '{}'), { code: 'SVC_ERR_SYNC_POST_ANSWER', message: /bad Content-Length/ });
  await t.rejects(p.post('/a', '{}'), { code: 'SVC_ERR_SYNC_POST_ANSWER', message: /bad chunk size/ });
  await t.rejects(p.post('/a', '{}'), { code: 'SVC_ERR_SYNC_POST_ANSWER', message: /more than its answer/ });
  await t.rejects(p.post('/a', '{}'), { code: 'SVC_ERR_SYNC_POST_ANSWER', message: /head over 64 KiB/ });
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(s.state.connections, 6);
});

t.test('a reused connection closed by the server: the POST goes once more on a new one', async (t) => {
  let closeNext = false;
  const s = await raw(t, (_req, socket, connection) => {
    if (connection === 1 && closeNext) socket.destroy();
    else socket.write(ok());
    closeNext = true;
  });
  const p = poster(t, s.url);
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(await p.post('/a', '{}'), 200, 'sent again after the close');
  t.equal(s.state.requests.length, 3);
  t.equal(s.state.connections, 2);

  // A connection that fails every time: one retry, then the error.
  const s2 = await raw(t, (_req, socket, connection) =>
    connection === 1 && s2.state.requests.length === 1 ? socket.write(ok()) : socket.destroy(),
  );
  const p2 = poster(t, s2.url);
  t.equal(await p2.post('/a', '{}'), 200);
  await t.rejects(p2.post('/a', '{}'), /closed|ECONNRESET/);
  t.equal(s2.state.requests.length, 3, 'sent twice, not more');
});

t.test("the server's keep-alive timeout: an idle connection is closed before it", async (t) => {
  const s = await raw(t, (_req, socket) => socket.write(ok('{}', 'Keep-Alive: timeout=1\r\n')));
  const p = poster(t, s.url);
  t.equal(await p.post('/a', '{}'), 200);
  await waitFor(() => s.state.closed === 1, 'the idle connection closed by the client');
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(s.state.connections, 2, 'the idle one was closed (timeout 1 s less a 1 s margin)');
});

t.test('unasked bytes drop the connection; the next POST goes on a new one', async (t) => {
  const sockets: net.Socket[] = [];
  const s = await raw(t, (_req, socket) => {
    socket.write(ok());
    sockets.push(socket);
  });
  const p = poster(t, s.url);
  t.equal(await p.post('/a', '{}'), 200);
  // Once the answer is read, bytes nobody asked for.
  sockets[0]!.write('surprise');
  await waitFor(() => s.state.closed === 1, 'the connection dropped by the client');
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(s.state.connections, 2);
});

t.test('a refused connection rejects; close() rejects what is on the wire and waiting', async (t) => {
  const s = await raw(t, () => undefined);
  const refused = poster(t, s.url.replace(/:\d+$/, ':1'));
  await t.rejects(refused.post('/a', '{}'), { code: 'ECONNREFUSED' });

  const p = poster(t, s.url, 1);
  const onWire = p.post('/a', '{}');
  const waiting = p.post('/a', '{"v":1}');
  const newer = p.post('/a', '{"v":2}');
  await waitFor(() => s.state.requests.length === 1, 'the first request on the wire');
  p.close();
  const closed = { code: 'SVC_ERR_SYNC_POST_CLOSED', message: 'sync client closed' };
  await t.rejects(onWire, closed);
  await t.rejects(waiting, closed, 'a request a newer one replaced fails with it');
  await t.rejects(newer, closed);
  await t.rejects(p.post('/a', '{}'), SyncPostClosedError, 'and what is posted after');
  await waitFor(() => s.state.closed === 1, 'the connection closed');
  t.equal(s.state.connections, 1, 'no connection opened after the close');
});

t.test('POSTs follow the shared endpoints to the next control', async (t) => {
  const held: { release?: () => void } = {};
  const a = await raw(t, (_req, socket) => {
    if (a.state.requests.length === 2) held.release = () => socket.write(ok());
    else socket.write(ok());
  });
  const b = await raw(t, (_req, socket) => socket.write(ok()));
  const endpoints = new ControlEndpoints([a.url, b.url]);
  const p = new SyncPoster(endpoints, 'Bearer x');
  t.teardown(() => p.close());
  t.equal(await p.post('/a', '{}'), 200);
  const slow = p.post('/a', '{}');
  const release = await waitFor(() => held.release, 'the second request held');
  endpoints.failed(a.url, 'test');
  t.equal(await p.post('/a', '{}'), 200, 'the next control answers');
  t.equal(b.state.requests.length, 1);
  release();
  t.equal(await slow, 200, 'the request on the wire to the old control is answered there');
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(b.state.requests.length, 2);
  t.equal(a.state.requests.length, 2);
});

t.test('requests left on the wire to a hung control do not hold the connections the next control needs', async (t) => {
  // The first control takes every request and answers none (stopped, its kernel still accepting).
  const hung = await raw(t, () => undefined);
  const b = await raw(t, (_req, socket) => socket.write(ok()));
  const endpoints = new ControlEndpoints([hung.url, b.url]);
  const p = new SyncPoster(endpoints, 'Bearer x', { maxConnections: 2 });
  t.teardown(() => p.close());
  const stuck = [p.post('/a', '{"n":1}'), p.post('/a', '{"n":2}')];
  await waitFor(() => hung.state.requests.length === 2, 'both requests on the wire to the hung control');
  endpoints.failed(hung.url, 'no word from control');
  t.equal(await p.post('/a', '{"n":3}'), 200, 'the next control answers while both connections to the hung one wait');
  t.equal(await p.post('/a', '{"n":4}'), 200);
  t.equal(b.state.requests.length, 2);
  t.equal(b.state.connections, 1, 'on one kept-alive connection');
  p.close();
  for (const req of stuck)
    await t.rejects(req, { code: 'SVC_ERR_SYNC_POST_CLOSED' }, 'what the hung control never answered fails at close');
});
