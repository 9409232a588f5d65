// The schema check in the request pipeline: the body streams to the caller unchanged, the
// outcome record of a schema endpoint holds the body's verdict and is journaled exactly once
// before the response ends, endpoints without a schema still journal at head time, and the
// settlement headers say what will be settled.
import t from 'tap';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { createHandler } from '../../gateway/request/handler';
import type { Journal } from '../../gateway/journal/journal';
import { GatewayMetrics } from '../../gateway/metrics';
import { createProxy } from '../../gateway/proxy/index';
import { GatewayState } from '../../gateway/state/state';
import { generateKey, hashKey } from '../../protocol/keys';
import type { OutcomeRecord } from '../../protocol/outcome';
import type { SnapshotEndpoint } from '../../protocol/snapshot';
import { ENGINES, listen, waitFor } from './fixtures/harness.cts';

const SCHEMA = { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } };
const BIG = JSON.stringify({ id: 1, pad: 'x'.repeat(300 * 1024) });

function upstream(): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').replace(/^\/base/, '');
    req.resume();
    const json = (status: number, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body);
    };
    switch (path) {
      case '/valid':
        return json(200, '{"id":1}');
      case '/invalid':
        return json(200, '{"id":"one"}');
      case '/gzip-invalid':
        return json(200, gzipSync('{"name":"no id"}') as unknown as string, { 'content-encoding': 'gzip' });
      case '/big':
        // Streamed in pieces, no Content-Length: the tee gives up once past the cap.
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < BIG.length; i += 16 * 1024) res.write(BIG.slice(i, i + 16 * 1024));
        return res.end();
      case '/broken':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":');
        setTimeout(() => res.socket?.destroy(), 50); // the scenario: the upstream breaks off after part of its body
        return;
      case '/error':
        return json(500, '{"error":"boom"}');
      case '/missing':
        return json(404, '{"error":"nope"}');
      case '/empty':
        res.writeHead(204);
        return res.end();
      case '/held':
        // Head now, body later: shows when the record is journaled.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":');
        setTimeout(() => res.end('"late"}'), 300);
        return;
      default:
        return json(200, '{"id":1}');
    }
  });
}

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Records journaled when the response head arrived, and when the body ended. */
  atHead: number;
  atEnd: number;
}

for (const engine of ENGINES)
  t.test(`schema endpoints through the handler [${engine}]`, async (t) => {
    const upstreamPort = await listen(t, upstream());
    const records: OutcomeRecord[] = [];
    // Records count as journaled when handed over; appendThen releases the response a turn later, like the real one.
    const journal = {
      append: (r: OutcomeRecord) => void records.push(r),
      appendThen: (r: OutcomeRecord, written: (err: Error | null) => void) => {
        records.push(r);
        setImmediate(() => written(null));
      },
    } as unknown as Journal;
    const metrics = new GatewayMetrics({
      snapshotVersion: () => 1,
      snapshotAgeSeconds: () => 0,
      journalBacklog: () => 0,
      controlConnected: () => true,
      keys: () => 1,
    });
    const endpoint = (id: string, extra: Partial<SnapshotEndpoint>): SnapshotEndpoint => ({
      id,
      upstream: `http://127.0.0.1:${upstreamPort}/base`,
      methods: ['POST', 'GET'],
      timeout_ms: 5_000,
      sla_ms: 5_000,
      price: 0,
      premium: 0,
      headers: {},
      ...extra,
    });
    const state = new GatewayState({
      version: 1,
      epoch: 0,
      flags: { beta_gate_enabled: false, maintenance_mode: false },
      limits: { key: { count: 1e6, window_seconds: 1, burst: 1e6 }, ip: { count: 1e6, window_seconds: 1, burst: 1e6 } },
      endpoints: [endpoint('typed', { response_schema: SCHEMA, price: 1000, premium: 100 }), endpoint('plain', {})],
    });
    const key = generateKey();
    state.putKey({
      id: 'key_a',
      secrets: [{ hash: hashKey(key), expires_at: null }],
      expires_at: null,
      endpoints: [],
      limit: null,
      lift: null,
    });
    const proxy = createProxy({ engine });
    t.teardown(() => proxy.close());
    const handler = createHandler({
      gatewayId: 'gw',
      state: () => state,
      proxy,
      journal,
      metrics,
      bodyLimitBytes: 1 << 20,
      maintenanceRetryAfterS: 1,
      trustedProxyHops: 0,
      maxHeaders: 100,
    });
    const port = await listen(t, http.createServer(handler));

    const call = (path: string, opts: { method?: string; key?: string } = {}): Promise<Got> =>
      new Promise((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            path,
            method: opts.method ?? 'POST',
            agent: false,
            headers: opts.key ? { authorization: `Bearer ${opts.key}` } : {},
          },
          (res) => {
            const atHead = records.length;
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', reject);
            res.on('aborted', () =>
              resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('latin1'), atHead, atEnd: -1 }),
            );
            res.on('end', () =>
              resolve({
                status: res.statusCode!,
                headers: res.headers,
                body: Buffer.concat(chunks).toString('latin1'),
                atHead,
                atEnd: records.length,
              }),
            );
          },
        );
        req.on('error', (err) =>
          err.message === 'aborted' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err),
        );
        req.end();
      });
    const recordOf = (res: Got) => records.filter((r) => r.call_id === res.headers['x-svc-call-id']);

    t.test('a valid body is ok', async (t) => {
      const res = await call('/v1/typed/valid');
      t.equal(res.status, 200);
      t.equal(res.body, '{"id":1}');
      t.equal(res.headers['x-svc-outcome'], 'ok');
      t.same(
        recordOf(res).map((r) => r.outcome),
        ['ok'],
      );
    });

    t.test('an invalid body is schema_mismatch; the caller still gets it as sent', async (t) => {
      const res = await call('/v1/typed/invalid', { key });
      t.equal(res.body, '{"id":"one"}', 'body untouched');
      t.equal(res.headers['x-svc-outcome'], 'ok', 'the head carries the head-time verdict');
      t.equal(res.headers['x-svc-premium'], '100', 'head-time premium');
      t.equal(res.headers['x-svc-refund'], '0');
      t.same(
        recordOf(res).map((r) => r.outcome),
        ['schema_mismatch'],
        'the record holds the final verdict, once',
      );
      t.ok(
        res.atEnd >= 0 && recordOf(res).length === 1 && records.indexOf(recordOf(res)[0]!) < res.atEnd,
        'journaled before the response ended',
      );
    });

    t.test('a gzip body is decoded for the check', async (t) => {
      const res = await call('/v1/typed/gzip-invalid');
      t.equal(res.headers['content-encoding'], 'gzip', 'passed through encoded');
      t.same(
        recordOf(res).map((r) => r.outcome),
        ['schema_mismatch'],
      );
    });

    t.test('a body over the cap is not checked: ok, counted in metrics', async (t) => {
      const res = await call('/v1/typed/big');
      t.equal(res.body.length, BIG.length, 'the whole body reached the caller');
      t.same(
        recordOf(res).map((r) => r.outcome),
        ['ok'],
      );
      t.match(await metrics.render(), /svc_gateway_schema_checks_total\{endpoint="typed",result="too_large"\} 1/);
      t.match(await metrics.render(), /svc_gateway_schema_checks_total\{endpoint="typed",result="invalid"\} 2/);
    });

    t.test('a body that breaks off is a network error, recorded once', async (t) => {
      const res = await call('/v1/typed/broken', { key });
      await waitFor(() => recordOf(res).length > 0, 'the record');
      // A second record would follow from the same broken connection's events; a later call's
      // record shows the gateway has gone on past them.
      const next = await call('/v1/typed/valid');
      t.equal(recordOf(next).length, 1, 'the next call is recorded');
      t.same(
        recordOf(res).map((r) => [r.outcome, r.status]),
        [['network_error', 200]],
      );
    });

    t.test('every upstream answer is journaled when its body ends, before the response ends', async (t) => {
      for (const [path, outcome] of [
        ['/v1/typed/error', 'server_error'],
        ['/v1/typed/missing', 'client_error'],
        ['/v1/typed/empty', 'ok'],
      ] as const) {
        const res = await call(path);
        t.same(
          recordOf(res).map((r) => r.outcome),
          [outcome],
          path,
        );
      }
      const head = await call('/v1/typed/valid', { method: 'HEAD' });
      t.same(
        recordOf(head).map((r) => r.outcome),
        ['ok'],
        'HEAD has no body to check',
      );
      const plain = await call('/v1/plain/held');
      t.equal(records.indexOf(recordOf(plain)[0]!), plain.atHead, 'no schema: not journaled when the head arrived');
      t.ok(plain.atEnd > plain.atHead, 'but before the body ended');
      t.same(
        recordOf(plain).map((r) => r.outcome),
        ['ok'],
        'and never re-checked',
      );
      const typed = await call('/v1/typed/held');
      t.equal(records.indexOf(recordOf(typed)[0]!), typed.atHead, 'schema: not journaled when the head arrived, but before the body ended');
      t.ok(typed.atEnd > typed.atHead, 'and was there when the body ended');
      t.same(
        recordOf(typed).map((r) => r.outcome),
        ['schema_mismatch'],
      );
    });

    t.test('settlement headers', async (t) => {
      const ok = await call('/v1/typed/valid', { key });
      t.equal(ok.headers['x-svc-premium'], '100');
      t.equal(ok.headers['x-svc-refund'], '0');
      t.equal(ok.headers['x-svc-settlement-pending'], '1');
      const failed = await call('/v1/typed/error', { key });
      t.equal(failed.headers['x-svc-premium'], '0');
      t.equal(failed.headers['x-svc-refund'], '1100', 'price + premium, before clamping');
      const client = await call('/v1/typed/missing', { key });
      t.equal(client.headers['x-svc-refund'], '0', 'client errors move nothing');
      const keyless = await call('/v1/typed/error');
      t.equal(keyless.headers['x-svc-refund'], '0', 'keyless calls move nothing');
      t.equal(keyless.headers['x-svc-settlement-pending'], '1');
      const plain = await call('/v1/plain/valid', { key });
      t.equal(plain.headers['x-svc-premium'], '0');
      t.equal(plain.headers['x-svc-settlement-pending'], undefined, 'unpriced endpoints have nothing pending');
    });

    t.test('every call produced exactly one record', async (t) => {
      const ids = records.map((r) => r.call_id);
      t.equal(new Set(ids).size, ids.length);
    });
  });
