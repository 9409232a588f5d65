/**
 * Admission's per-connection key digest (`gateway/request/key-digest.ts`): a keep-alive
 * connection that sends the same key is hashed once, yet every call is still judged against the
 * current state. On one connection: two keys in turn, a key removed from the state is refused at
 * its next call, a malformed bearer after a good one is refused, and the digest is the key's
 * SHA-256 (the hash the snapshot holds).
 */
import t from 'tap';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Journal } from '../../gateway/journal/journal';
import { GatewayMetrics } from '../../gateway/metrics';
import { createProxy } from '../../gateway/proxy/index';
import { createHandler } from '../../gateway/request/handler';
import { digestOf } from '../../gateway/request/key-digest';
import { GatewayState } from '../../gateway/state/state';
import { generateKey, hashKey } from '../../protocol/keys';
import { listen, request } from './fixtures/harness.cts';

t.test('the digest is the key hash, remembered per connection, and never for a malformed bearer', async (t) => {
  const socket = {} as Socket;
  const other = {} as Socket;
  const a = generateKey();
  const b = generateKey();
  t.equal(digestOf(socket, a), hashKey(a), 'the SHA-256 the snapshot holds');
  t.equal(digestOf(socket, a), hashKey(a), 'the same again from memory');
  t.equal(digestOf(socket, b), hashKey(b), 'another key on the same connection replaces it');
  t.equal(digestOf(other, a), hashKey(a), 'connections do not share');
  t.equal(digestOf(socket, 'svc_beta_not-a-key'), null, 'a malformed bearer has no digest');
  t.equal(digestOf(socket, b), hashKey(b), 'and leaves the last good one in place');
});

t.test('one keep-alive connection: each call is judged against the current state', async (t) => {
  const upstreamPort = await listen(
    t,
    http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    }),
  );
  const state = new GatewayState({
    version: 1,
    epoch: 0,
    flags: { beta_gate_enabled: true, maintenance_mode: false },
    limits: { key: { count: 1e6, window_seconds: 1, burst: 1e6 }, ip: { count: 1e6, window_seconds: 1, burst: 1e6 } },
    endpoints: [
      {
        id: 'ep',
        upstream: `http://127.0.0.1:${upstreamPort}/base`,
        methods: ['POST'],
        timeout_ms: 5_000,
        sla_ms: 5_000,
        price: 0,
        premium: 0,
        headers: {},
      },
    ],
  });
  const keys = { key_a: generateKey(), key_b: generateKey() };
  for (const [id, secret] of Object.entries(keys)) {
    state.putKey({ id, secrets: [{ hash: hashKey(secret), expires_at: null }], expires_at: null, endpoints: [], limit: null, lift: null });
  }
  const journal = { append: () => undefined, appendThen: (_r: unknown, written: (e: null) => void) => setImmediate(() => written(null)) };
  const proxy = createProxy({ engine: 'http-proxy' });
  t.teardown(() => proxy.close());
  const handler = createHandler({
    gatewayId: 'gw-digest',
    state: () => state,
    proxy,
    journal: journal as unknown as Journal,
    metrics: new GatewayMetrics({
      snapshotVersion: () => 1,
      snapshotAgeSeconds: () => 0,
      journalBacklog: () => 0,
      controlConnected: () => true,
      keys: () => 2,
    }),
    bodyLimitBytes: 1 << 20,
    maintenanceRetryAfterS: 1,
    trustedProxyHops: 0,
    maxHeaders: 100,
  });
  const server = http.createServer(handler);
  let connections = 0;
  server.on('connection', () => connections++);
  const port = await listen(t, server);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const call = async (bearer: string) => {
    const answer = await request(port, {
      agent,
      method: 'POST',
      path: '/v1/ep/x',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: '{}',
    });
    return answer.status === 403 ? `403 ${(JSON.parse(answer.body) as { code: string }).code}` : String(answer.status);
  };

  t.equal(await call(keys.key_a), '200', 'key a');
  t.equal(await call(keys.key_b), '200', 'key b on the same connection');
  t.equal(await call(keys.key_a), '200', 'key a again');
  state.removeKey('key_a');
  t.equal(await call(keys.key_a), '403 svc_auth_not_in_beta', 'key a gone from the state: refused at once');
  t.equal(await call('svc_beta_malformed'), '403 svc_auth_not_in_beta', 'a malformed bearer after a good one');
  t.equal(await call(keys.key_b), '200', 'key b still admitted');
  t.equal(connections, 1, 'every call on one connection');
});
