/**
 * A real gateway process against a fake control that speaks the sync protocol
 * (protocol/snapshot.ts) by hand (docs/design.md §4): the gateway applies a valid snapshot and acks
 * it with its digest; it nacks a delta whose seal is broken, one whose base is not the version
 * it holds, and one that fails validation halfway, and keeps enforcing the old state in full
 * after each; a valid delta still applies afterwards; and what it persisted is the last good
 * state, not a rejected one.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertProblem, health, request, startGatewayProcess, testdirAfterTeardowns } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';
import { generateKey, hashKey } from '../../protocol/keys';
import { SnapshotDigest, sealDelta, type SnapshotKey } from '../../protocol/snapshot';

const SYNC_TOKEN = 'sync-token-for-the-fake-control-0123456789';
const METRICS_TOKEN = 'metrics-token-for-the-nack-test-0123456789';

interface Ack {
  gateway_id: string;
  version: number;
  sha256?: string;
  ok: boolean;
  reason?: string;
}

/** A queue whose `next()` resolves with the next item, waiting if none is there yet. */
function queue<T>() {
  const items: T[] = [];
  const waiting: ((item: T) => void)[] = [];
  return {
    push(item: T) {
      const w = waiting.shift();
      if (w) w(item);
      else items.push(item);
    },
    next(limitMs = 10_000): Promise<T> {
      const item = items.shift();
      if (item !== undefined) return Promise.resolve(item);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('nothing arrived within the limit')), limitMs);
        waiting.push((i) => {
          clearTimeout(timer);
          resolve(i);
        });
      });
    },
    items,
  };
}

interface Stream {
  query: URLSearchParams;
  send(line: string): void;
}

/** Control's sync listener, faked: streams are handed to the test, acks and outcomes recorded. */
async function startFakeControl(t: Test) {
  const streams = queue<Stream>();
  const acks = queue<Ack>();
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${SYNC_TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'GET' && url.pathname === '/_sync/v1/stream') {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.flushHeaders();
      open.add(res);
      res.on('close', () => open.delete(res));
      streams.push({ query: url.searchParams, send: (line) => res.write(line + '\n') });
      return;
    }
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      if (url.pathname === '/_sync/v1/ack') {
        acks.push(JSON.parse(body) as Ack);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      } else if (url.pathname === '/_sync/v1/outcomes') {
        const records = (JSON.parse(body) as { records: unknown[] }).records;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: records.length, duplicates: 0 }));
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, streams, acks };
}

const keyEntry = (id: string, key: string): SnapshotKey => ({
  id,
  secrets: [{ hash: hashKey(key), expires_at: null }],
  expires_at: null,
  endpoints: [],
  limit: null,
  lift: null,
});

t.test('a gateway nacks broken deltas and keeps its last good state', async (t) => {
  const up = await startUpstream(t);
  const fake = await startFakeControl(t);
  const dataDir = testdirAfterTeardowns(t);
  const env = { SVC_SYNC_TOKEN: SYNC_TOKEN, SVC_METRICS_TOKEN: METRICS_TOKEN };
  let gw = await startGatewayProcess(t, { dataDir, controlUrl: fake.url, id: 'gw-nack', env, waitReady: false });
  const first = await fake.streams.next();
  t.equal(first.query.get('gateway_id'), 'gw-nack', 'the gateway announces its id');
  t.equal(first.query.get('version'), '0', 'and that it holds nothing');
  assertProblem(t, await request(gw.url, '/v1/ep/x', { body: '{}' }), 503, 'svc_gateway_not_ready', 'before any snapshot');
  const notReady = await health(gw.url);
  t.equal(notReady.status, 503, '/health is 503 before any snapshot');
  t.match(notReady.body, { status: 'not_ready', ready: false, reason: /\S/ }, 'and says why');

  const one = generateKey();
  const two = generateKey();
  const call = async (key: string) =>
    (await request(gw.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${key}` } })).status;

  // Version 1: a full snapshot with the gate on and key one.
  const begin = JSON.stringify({
    type: 'snapshot_begin',
    version: 1,
    epoch: 4242,
    generated_at: new Date().toISOString(),
    flags: { beta_gate_enabled: true, maintenance_mode: false },
    limits: { key: { count: 1000, window_seconds: 60, burst: 1000 }, ip: { count: 1000, window_seconds: 60, burst: 1000 } },
    endpoints: [
      { id: 'ep', upstream: `${up.url}/base`, methods: ['POST'], timeout_ms: 5000, sla_ms: 5000, price: 0, premium: 0, headers: {} },
    ],
    key_count: 1,
  });
  const keys = JSON.stringify({ type: 'keys', keys: [keyEntry('key_one', one)] });
  const digest = new SnapshotDigest();
  digest.update(begin);
  digest.update(keys);
  const sha1 = digest.digest();
  for (const line of [begin, keys, JSON.stringify({ type: 'snapshot_end', version: 1, sha256: sha1 })]) first.send(line);
  t.same(await fake.acks.next(), { gateway_id: 'gw-nack', version: 1, sha256: sha1, ok: true }, 'snapshot 1 acked with its digest');
  t.equal(await call(one), 200, 'key one admitted');
  t.equal(await call(two), 403, 'key two unknown');

  const holdsVersionOne = async (t: Test, what: string) => {
    const h = (await health(gw.url)).body;
    t.equal(h.snapshot_version, 1, `${what}: still at version 1`);
    t.equal(await call(one), 200, `${what}: key one still admitted`);
    t.equal(await call(two), 403, `${what}: key two still refused`);
    return h;
  };

  await t.test('a delta with a broken seal is nacked', async (t) => {
    const { line } = sealDelta({ type: 'delta', version: 2, base: 1, keys_upsert: [keyEntry('key_two', two)], keys_remove: ['key_one'] });
    first.send(line.replace('"key_one"', '"key_0ne"'));
    const ack = await fake.acks.next();
    t.match(ack, { gateway_id: 'gw-nack', version: 2, ok: false }, 'nacked');
    t.match(ack.reason, /seal/, 'the reason names the seal');
    t.notMatch(ack.reason, /^internal:/, 'a refused update (SVC_ERR_UPDATE_REJECTED), not an internal failure');
    const h = await holdsVersionOne(t, 'after the broken seal');
    t.match(h.last_nack, /^v2: .*seal/, '/health shows the nack');
  });

  await t.test('a delta whose base is not the held version is nacked', async (t) => {
    first.send(sealDelta({ type: 'delta', version: 3, base: 7, keys_upsert: [keyEntry('key_two', two)], keys_remove: ['key_one'] }).line);
    const ack = await fake.acks.next();
    t.match(ack, { gateway_id: 'gw-nack', version: 3, ok: false }, 'nacked');
    t.match(ack.reason, /base 7/, 'the reason names the base');
    await holdsVersionOne(t, 'after the wrong base');
  });

  await t.test('a delta that fails validation halfway is nacked and nothing of it applies', async (t) => {
    const bad = {
      id: 'ep',
      upstream: 'ftp://127.0.0.1/x',
      methods: ['POST' as const],
      timeout_ms: 5000,
      sla_ms: 5000,
      price: 0,
      premium: 0,
      headers: {},
    };
    first.send(
      sealDelta({
        type: 'delta',
        version: 2,
        base: 1,
        keys_remove: ['key_one'],
        keys_upsert: [keyEntry('key_two', two)],
        endpoints_upsert: [bad],
      }).line,
    );
    const ack = await fake.acks.next();
    t.match(ack, { gateway_id: 'gw-nack', version: 2, ok: false }, 'nacked');
    await holdsVersionOne(t, 'after the invalid endpoint');
    t.ok(up.requestsTo('/base/').length > 0, 'calls still reach the old upstream');
  });

  await t.test('a valid delta still applies after the nacks', async (t) => {
    const { line, sha256 } = sealDelta({ type: 'delta', version: 2, base: 1, keys_upsert: [keyEntry('key_two', two)] });
    first.send(line);
    t.same(await fake.acks.next(), { gateway_id: 'gw-nack', version: 2, sha256, ok: true }, 'acked with the seal');
    t.equal((await health(gw.url)).body.snapshot_version, 2);
    t.equal(await call(one), 200, 'key one admitted');
    t.equal(await call(two), 200, 'key two admitted');
  });

  await t.test('after a crash the gateway boots from the last good state, not a rejected one', async (t) => {
    await gw.kill('SIGKILL');
    gw = await startGatewayProcess(t, { dataDir, controlUrl: fake.url, id: 'gw-nack', env });
    const again = await fake.streams.next();
    t.equal(again.query.get('version'), '2', 'it announces version 2');
    t.equal(again.query.get('epoch'), '4242', 'of the same epoch');
    t.equal((await health(gw.url)).body.snapshot_version, 2);
    t.equal(await call(one), 200, 'key one admitted');
    t.equal(await call(two), 200, 'key two admitted');
    t.same(fake.acks.items, [], 'nothing more was acked or nacked');
  });
});
