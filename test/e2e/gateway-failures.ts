/**
 * Upstream failures and gateway refusals through a real gateway process (docs/design.md §3.6, §3.8,
 * §6): timeouts are 504, refused and reset connections 502, the upstream's own errors pass
 * through with the right outcome, oversized bodies are 413 before any upstream traffic,
 * maintenance is 503 with Retry-After. Control ends up with exactly one outcome per admitted
 * call, with the outcome the caller was told, and the gateway survives all of it.
 */
import t from 'tap';
import http from 'node:http';
import { GENEROUS_LIMITS, assertProblem, drained, health, rawRequest, request, startStack, type HttpResult } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { closedPort, ok, startUpstream } from '../fixtures/upstream';

const BODY_LIMIT = 1024;

for (const engine of ENGINES)
  t.test(`failures [${engine}]`, async (t) => {
    const stack = await startStack(t, {
      engine,
      controlEnv: GENEROUS_LIMITS,
      gatewayEnv: { SVC_GATEWAY_BODY_LIMIT_BYTES: String(BODY_LIMIT) },
    });
    const up = await startUpstream(t);
    up.on('/slow/*', { kind: 'hang' });
    up.on('/reset/*', { kind: 'reset-before-headers' });
    up.on('/cut/*', { kind: 'reset-after-headers' });
    up.on('/boom/*', ok({ status: 500, body: { upstream: 'exploded' } }));
    up.on('/lazy/*', ok({ delayMs: 300 }));
    up.on('/missing/*', ok({ status: 404, body: { upstream: 'no such thing' } }));
    up.on('/busy/*', ok({ status: 429, body: { upstream: 'slow down' }, headers: { 'retry-after': '7' } }));
    await stack.addEndpoint({ id: 'slow', upstream: `${up.url}/slow`, timeout_ms: 300 });
    await stack.addEndpoint({ id: 'closed', upstream: `http://127.0.0.1:${await closedPort()}/x` });
    await stack.addEndpoint({ id: 'reset', upstream: `${up.url}/reset` });
    await stack.addEndpoint({ id: 'cut', upstream: `${up.url}/cut` });
    await stack.addEndpoint({ id: 'boom', upstream: `${up.url}/boom` });
    await stack.addEndpoint({ id: 'lazy', upstream: `${up.url}/lazy`, sla_ms: 100 });
    await stack.addEndpoint({ id: 'missing', upstream: `${up.url}/missing` });
    await stack.addEndpoint({ id: 'busy', upstream: `${up.url}/busy` });
    await stack.applied(await stack.addEndpoint({ id: 'fine', upstream: `${up.url}/fine` }));
    const gw = stack.gateway;
    /** Admitted calls by id → [outcome header, status] as the caller saw them. */
    const admitted = new Map<string, [string, number]>();
    const call = async (path: string, opts: Parameters<typeof request>[2] = {}): Promise<HttpResult> => {
      const res = await request(gw, path, { body: '{}', ...opts });
      const id = res.headers['x-svc-call-id'];
      if (typeof id === 'string') admitted.set(id, [res.headers['x-svc-outcome'] as string, res.status]);
      return res;
    };

    await t.test('an upstream slower than timeout_ms is 504 svc_upstream_timeout, network_error', async (t) => {
      const res = await call('/v1/slow/x');
      assertProblem(t, res, 504, 'svc_upstream_timeout');
      t.equal(res.headers['x-svc-outcome'], 'network_error');
      t.equal(up.requestsTo('/slow/').length, 1, 'the upstream did get the call');
    });

    await t.test('a closed upstream port is 502 svc_upstream_unavailable, network_error', async (t) => {
      const res = await call('/closed/x');
      assertProblem(t, res, 502, 'svc_upstream_unavailable');
      t.equal(res.headers['x-svc-outcome'], 'network_error');
      t.notMatch(res.text, /127\.0\.0\.1/, 'the upstream address is not leaked');
    });

    await t.test('an upstream reset before the head is 502, network_error', async (t) => {
      const res = await call('/v1/reset/x');
      assertProblem(t, res, 502, 'svc_upstream_unavailable');
      t.equal(res.headers['x-svc-outcome'], 'network_error');
      t.equal(up.requestsTo('/reset/').length, 1);
    });

    await t.test('upstream 5xx passes through as server_error', async (t) => {
      const res = await call('/v1/boom/x');
      t.equal(res.status, 500);
      t.same(res.body, { upstream: 'exploded' }, 'the upstream’s body, untouched');
      t.equal(res.headers['x-svc-outcome'], 'server_error');
    });

    await t.test('a 2xx slower than sla_ms is a latency_breach', async (t) => {
      const res = await call('/lazy/x');
      t.equal(res.status, 200);
      t.equal(res.headers['x-svc-outcome'], 'latency_breach');
      t.ok(Number(res.headers['x-svc-latency-ms']) >= 300, 'the reported latency covers the upstream’s delay');
    });

    await t.test('upstream 4xx (429 included) passes through as client_error', async (t) => {
      const missing = await call('/v1/missing/x');
      t.equal(missing.status, 404);
      t.same(missing.body, { upstream: 'no such thing' });
      t.equal(missing.headers['x-svc-outcome'], 'client_error');
      const busy = await call('/busy/x');
      t.equal(busy.status, 429);
      t.same(busy.body, { upstream: 'slow down' }, 'the upstream’s 429, not svc_rate_limited');
      t.equal(busy.headers['retry-after'], '7');
      t.equal(busy.headers['x-svc-outcome'], 'client_error');
    });

    await t.test('a body over the gateway’s limit is 413 and the upstream sees nothing', async (t) => {
      const before = up.requests.length;
      const declared = await call('/v1/fine/x', { body: 'x'.repeat(BODY_LIMIT + 1) });
      assertProblem(t, declared, 413, 'svc_payload_too_large', 'Content-Length over the limit');
      t.equal(declared.headers['x-svc-call-id'], undefined);
      const atLimit = await call('/v1/fine/x', { body: 'x'.repeat(BODY_LIMIT) });
      t.equal(atLimit.status, 200, 'a body of exactly the limit passes');
      t.equal(up.requests.length, before + 1, 'only the body within the limit was forwarded');
    });

    await t.test('a chunked body over the limit is 413, never completes upstream, and is the caller’s error', async (t) => {
      const before = up.requests.length;
      const res = await new Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const url = new URL(gw);
        const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/v1/fine/chunked', agent: false });
        req.on('error', reject);
        req.on('response', (r) => {
          let text = '';
          r.setEncoding('utf8').on('data', (c: string) => (text += c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(text), headers: r.headers }));
          r.on('error', reject);
        });
        req.write('y'.repeat(BODY_LIMIT));
        setTimeout(() => req.end('y'.repeat(BODY_LIMIT)), 50); // the scenario: the body in two pieces, the limit passed by the second
      });
      t.equal(res.status, 413);
      t.equal(res.body.code, 'svc_payload_too_large');
      t.match(res.headers, { 'x-svc-outcome': 'caller_error', 'x-svc-refund': '0', 'x-svc-premium': '0', connection: 'close' });
      admitted.set(res.headers['x-svc-call-id'] as string, ['caller_error', 413]);
      const seen = up.requests.slice(before);
      t.notOk(
        seen.some((r) => r.complete),
        'no oversized body was delivered upstream',
      );
      t.notOk(
        seen.some((r) => r.body.length > BODY_LIMIT),
        'the upstream never got more than the limit',
      );
    });

    await t.test('maintenance_mode is 503 svc_maintenance with Retry-After, on both path forms', async (t) => {
      await stack.applied(await stack.setFlag('maintenance_mode', true));
      const before = up.requests.length;
      for (const path of ['/v1/fine/x', '/fine/x']) {
        const res = await call(path);
        assertProblem(t, res, 503, 'svc_maintenance', path);
        t.match(res.headers['retry-after'], /^[1-9]\d*$/, 'Retry-After is a positive integer');
        t.equal(res.headers['x-svc-call-id'], undefined);
      }
      t.equal(up.requests.length, before, 'nothing forwarded during maintenance');
      await stack.applied(await stack.setFlag('maintenance_mode', false));
      t.equal((await call('/fine/x')).status, 200, 'maintenance off: calls pass again');
    });

    await t.test('an upstream reset after the head cuts the caller off and is recorded as network_error', async (t) => {
      const started = await new Promise<{ status: number; error: string | null; id: string }>((resolve) => {
        const url = new URL(gw);
        const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/v1/cut/x', agent: false });
        req.on('error', (err) => resolve({ status: 0, error: err.message, id: '' }));
        req.on('response', (r) => {
          const id = r.headers['x-svc-call-id'] as string;
          r.resume();
          r.on('error', (err) => resolve({ status: r.statusCode ?? 0, error: err.message, id }));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, error: null, id }));
        });
        req.end('{}');
      });
      t.equal(started.status, 200, 'the head got through');
      t.not(started.error, null, 'the body was cut off, not completed');
      await drained(gw);
      const row = stack.outcomes().find((r) => r.call_id === started.id);
      t.equal(
        row?.outcome,
        'network_error',
        'a reset mid-body is the provider’s network_error (classify: a transport failure wins over the status)',
      );
    });

    await t.test('the gateway survived; control holds exactly the admitted calls with the outcomes the callers saw', async (t) => {
      t.ok(stack.gateways[0]!.running(), 'the gateway process is alive');
      t.equal((await health(gw)).status, 200, '/health is 200');
      const raw = await rawRequest(
        Number(new URL(gw).port),
        'POST /fine/after HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      t.equal(raw.status, 200, 'and still proxies');
      admitted.set(raw.headers['x-svc-call-id']!, ['ok', 200]);

      await drained(gw);
      const rows = new Map(
        stack
          .outcomes()
          .filter((r) => !r.endpoint_id.startsWith('cut'))
          .map((r) => [r.call_id, r]),
      );
      t.same(
        [...rows.keys()].sort(),
        [...admitted.keys()].sort(),
        'one outcome per admitted call; no refusal before forwarding (declared 413, 503) became an outcome',
      );
      for (const [id, [outcome, status]] of admitted) {
        t.same([rows.get(id)?.outcome, rows.get(id)?.status], [outcome, status], `${id}: ${outcome} ${status}`);
      }
      const byOutcome = [...rows.values()].map((r) => `${r.endpoint_id}:${r.outcome}:${r.status}`).sort();
      t.same(byOutcome, [
        'boom:server_error:500',
        'busy:client_error:429',
        'closed:network_error:502',
        'fine:caller_error:413',
        'fine:ok:200',
        'fine:ok:200',
        'fine:ok:200',
        'lazy:latency_breach:200',
        'missing:client_error:404',
        'reset:network_error:502',
        'slow:network_error:504',
      ]);
    });
  });
