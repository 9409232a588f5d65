/**
 * What keeps `SyncPoster` (the gateway's ack client) from a hung control and from piling up
 * acks: the response timeout fails a request with no complete answer and destroys its
 * connection; waiting requests are keyed, a newer one replacing the older (whose caller gets
 * its answer), and past `maxQueued` keys a request is refused; both coded and counted. And
 * HTTPS: config takes an https control URL, and the acks go over TLS to it, the certificate
 * checked.
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type net from 'node:net';
import { loadConfig } from '../../config/load';
import { ANSWER_LIMIT_MS, ackKey } from '../../gateway/state/sync-client';
import type { SyncAck } from '../../protocol/snapshot';
import { ControlEndpoints } from '../../gateway/control-link/sync-http';
import { SYNC_POST_TIMEOUT_MS, SyncPoster, SyncPostQueueFullError, type SyncPosterOptions } from '../../gateway/control-link/sync-post';
import { ok, rawControl } from '../fixtures/raw-control';
import { waitFor } from '../fixtures/stack';

t.setTimeout(60_000);

function poster(t: Test, url: string, options: SyncPosterOptions) {
  const p = new SyncPoster(new ControlEndpoints([url]), 'Bearer sync-token-123', options);
  t.teardown(() => p.close());
  return p;
}

t.test('the default response timeout is the sync stream’s answer deadline', async (t) => {
  t.equal(SYNC_POST_TIMEOUT_MS, ANSWER_LIMIT_MS);
  t.equal(SYNC_POST_TIMEOUT_MS, 6_000);
});

t.test('a hung control: no complete answer within the timeout fails the request and frees its connection', async (t) => {
  // Connections 1 and 2 hang (the second with half an answer); the third is answered.
  const s = await rawControl(t, (_req, socket, connection) => {
    if (connection === 2) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"o');
    if (connection >= 3) socket.write(ok());
  });
  const timeoutMs = 300;
  const p = poster(t, s.url, { maxConnections: 2, responseTimeoutMs: timeoutMs });
  const started = Date.now();
  const failed = [p.post('/a', '{"n":1}', 'a'), p.post('/a', '{"n":2}', 'b')].map((req) =>
    req.then(
      () => null,
      (err: unknown) => ({ err, ms: Date.now() - started }),
    ),
  );
  const third = p.post('/a', '{"n":3}', 'c');
  for (const result of await Promise.all(failed)) {
    t.match(result, {
      err: { code: 'SVC_ERR_SYNC_POST_TIMEOUT', name: 'SyncPostTimeoutError', message: 'control did not answer within 0.3 s' },
    });
    t.comment(`failed after ${result!.ms} ms (timeout ${timeoutMs} ms)`);
    t.ok(result!.ms >= timeoutMs - 10 && result!.ms < 5_000, 'at the timeout');
  }
  await waitFor(() => s.state.closed === 2, 'both hung connections destroyed');
  t.equal(await third, 200, 'the waiting request goes on a new connection once the hung ones are gone');
  t.same(
    s.state.requests.map((r) => r.body),
    ['{"n":1}', '{"n":2}', '{"n":3}'],
    'a timed-out request is not sent again',
  );
  t.equal(s.state.connections, 3);
  t.same(p.stats, { superseded: 0, refused: 0, timedOut: 2 });
});

t.test('an answer in time clears the timer: a kept-alive connection outlives it', async (t) => {
  const s = await rawControl(t, (_req, socket) => socket.write(ok()));
  const p = poster(t, s.url, { responseTimeoutMs: 100 });
  t.equal(await p.post('/a', '{}'), 200);
  // Past the timeout of the first, the second goes on the same connection.
  const ms = Date.now();
  await waitFor(() => Date.now() - ms > 200, 'twice the timeout');
  t.equal(await p.post('/a', '{}'), 200);
  t.equal(s.state.connections, 1);
  t.equal(s.state.closed, 0, 'nothing destroyed');
  t.equal(p.stats.timedOut, 0);
});

t.test('a newer request with the key of a waiting one takes its place; the older caller gets its answer', async (t) => {
  const held: net.Socket[] = [];
  const s = await rawControl(t, (req, socket) => {
    if (s.state.requests.length === 1) held.push(socket);
    else socket.write(`HTTP/1.1 ${req.body.includes('"version":4') ? 201 : 200} OK\r\nContent-Length: 0\r\n\r\n`);
  });
  const p = poster(t, s.url, { maxConnections: 1 });
  // The gateway's own keys (gateway/state/sync-client.ts): acks, nacks and renewals apart.
  const sent = (body: SyncAck) => p.post('/_sync/v1/ack', JSON.stringify(body), ackKey(body));
  const at = (version: number) => ({ gateway_id: 'gw', version });
  const first = sent({ ...at(1), ok: true });
  const v2 = sent({ ...at(2), ok: true });
  const renew = sent({ ...at(2), ok: true, renew: true });
  const nack = sent({ ...at(3), ok: false, reason: 'bad delta' });
  const v4 = sent({ ...at(4), ok: true });
  const other = p.post('/other', '{"x":1}');
  const keyed = [p.post('/k', '{"k":1}', 'k'), p.post('/k2', '{"k":2}', 'k')];
  await waitFor(() => held.length === 1, 'the first request on the wire');
  held[0]!.write(ok());
  t.same(
    await Promise.all([first, v2, v4, renew, nack, other, ...keyed]),
    [200, 201, 201, 200, 200, 200, 200, 200],
    'v2 answered with v4’s answer',
  );
  t.same(
    s.state.requests.map((r) => JSON.parse(r.body) as unknown),
    [
      { ...at(1), ok: true },
      { ...at(4), ok: true },
      { ...at(2), ok: true, renew: true },
      { ...at(3), ok: false, reason: 'bad delta' },
      { x: 1 },
      { k: 2 },
    ],
    'v4 in v2’s place, before the renewal and the nack posted after v2 and kept beside it; the newest of key k',
  );
  t.match(s.state.requests[5]!.head, /^POST \/k2 /, 'to the newer request’s path');
  t.same(p.stats, { superseded: 2, refused: 0, timedOut: 0 });
});

t.test('past maxQueued keys a request is refused unsent; a newer one of a waiting key is still taken', async (t) => {
  const held: net.Socket[] = [];
  const s = await rawControl(t, (_req, socket) => held.push(socket));
  const p = poster(t, s.url, { maxConnections: 1, maxQueued: 2 });
  const onWire = p.post('/a', '{}', 'wire');
  await waitFor(() => held.length === 1, 'the first request on the wire');
  const waiting = [p.post('/a', '{"a":1}', 'a'), p.post('/a', '{"b":1}', 'b')];
  await t.rejects(p.post('/a', '{"c":1}', 'c'), SyncPostQueueFullError);
  await t.rejects(p.post('/a', '{"c":1}', 'c'), { code: 'SVC_ERR_SYNC_POST_QUEUE_FULL', message: '2 sync requests wait already' });
  const newer = p.post('/a', '{"a":2}', 'a');
  t.same(p.stats, { superseded: 1, refused: 2, timedOut: 0 });
  held[0]!.write(ok());
  await waitFor(() => held.length === 2, 'the next on the wire');
  held[1]!.write(ok());
  await waitFor(() => held.length === 3, 'the last on the wire');
  held[2]!.write(ok());
  t.same(await Promise.all([onWire, ...waiting, newer]), [200, 200, 200, 200]);
  t.same(
    s.state.requests.map((r) => r.body),
    ['{}', '{"a":2}', '{"b":1}'],
  );
  const again = p.post('/a', '{"c":2}', 'c');
  await waitFor(() => held.length === 4, 'a request of a new key on the wire');
  held[3]!.write(ok());
  t.equal(await again, 200, 'taken again once the queue has room');
});

t.test('an https control URL: config takes it, and the acks go over TLS, the certificate checked', async (t) => {
  const dir = t.testdir();
  // A throwaway self-signed certificate for 127.0.0.1.
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
      ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
    ],
    { stdio: 'ignore' },
  );
  const cert = readFileSync(join(dir, 'cert.pem'));
  const s = await rawControl(t, (_req, socket) => socket.write(ok()), { tls: { key: readFileSync(join(dir, 'key.pem')), cert } });
  t.match(s.url, /^https:\/\//);
  const config = loadConfig({ env: { SVC_CONTROL_URLS: s.url } });
  t.same(config.controlUrls, [s.url], 'config takes the https control URL');
  const endpoints = new ControlEndpoints([...config.controlUrls!]);

  const untrusted = new SyncPoster(endpoints, 'Bearer sync-token-123');
  t.teardown(() => untrusted.close());
  await t.rejects(
    untrusted.post('/_sync/v1/ack', '{}'),
    { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' },
    'a certificate node does not trust is refused',
  );
  t.equal(s.state.requests.length, 0, 'nothing sent to it');

  const p = new SyncPoster(endpoints, 'Bearer sync-token-123', { ca: cert });
  t.teardown(() => p.close());
  t.equal(await p.post('/_sync/v1/ack', '{"version":1}'), 200);
  t.equal(await p.post('/_sync/v1/ack', '{"version":2}'), 200);
  t.same(
    s.state.requests.map((r) => r.body),
    ['{"version":1}', '{"version":2}'],
  );
  t.match(
    s.state.requests[0]!.head,
    /^POST \/_sync\/v1\/ack HTTP\/1\.1\r\nHost: 127\.0\.0\.1:\d+\r\nAuthorization: Bearer sync-token-123\r\n/,
  );
  t.equal(s.state.connections, 1, 'one TLS connection (the refused handshake made none), kept alive for both');
});
