// Prepaid admission in the request pipeline (`gateway/request/handler.ts`, pay stage), on each
// proxy engine, against a stand-in for control's budget API: keyed calls with an account on a
// prepaid endpoint are admitted while this instance's budget covers the premium and carry
// `reserved` and `instance` in their records; past it they get 402 `svc_payment_required`
// (problem+json with `required`, `available`, `account_id` and a Link to the account), with no
// upstream request and no record. Short calls share one request; a call that waited for budget
// still forwards its body whole; a caller that left while waiting spends nothing.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { ControlEndpoints } from '../../gateway/control-link/sync-http';
import type { Journal } from '../../gateway/journal/journal';
import { GatewayMetrics } from '../../gateway/metrics';
import { createProxy } from '../../gateway/proxy/index';
import { createHandler } from '../../gateway/request/handler';
import { Budgets } from '../../gateway/state/budgets';
import { GatewayState } from '../../gateway/state/state';
import { PROBLEM_TYPE_BASE } from '../../protocol/errors';
import { generateKey, hashKey } from '../../protocol/keys';
import type { OutcomeRecord } from '../../protocol/outcome';
import type { SnapshotEndpoint } from '../../protocol/snapshot';
import { SYNC_TOKEN, gate, startBudgetControl, type BudgetControl } from './fixtures/budget-control';
import { ENGINES, listen, request, waitFor, type GatewayEngine } from './fixtures/harness.cts';

const INSTANCE = 'inst-admission-test';
const PREMIUM = 500;

interface Stack {
  port: number;
  control: BudgetControl;
  budgets: Budgets;
  records: OutcomeRecord[];
  /** Bodies the upstream received, as their SHA-256 and length. */
  upstream: { hits: number; bodies: { sha: string; length: number }[] };
  metrics: GatewayMetrics;
  /** want() calls the handler made. */
  wants: () => number;
  /** A key for each account (and `none`: a key without an account). */
  keys: Record<string, string>;
}

const ACCOUNTS = ['acc_a', 'acc_b', 'acc_c', 'acc_d'];

async function startPrepaid(t: Test, engine: GatewayEngine, init: { funds: Record<string, number>; step?: number }): Promise<Stack> {
  const upstream = { hits: 0, bodies: [] as { sha: string; length: number }[] };
  const upstreamPort = await listen(
    t,
    http.createServer((req, res) => {
      upstream.hits++;
      const sha = createHash('sha256');
      let length = 0;
      req.on('data', (c: Buffer) => {
        sha.update(c);
        length += c.length;
      });
      req.on('end', () => {
        upstream.bodies.push({ sha: sha.digest('hex'), length });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    }),
  );
  const records: OutcomeRecord[] = [];
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
    methods: ['POST'],
    timeout_ms: 5_000,
    sla_ms: 5_000,
    price: 1_000,
    premium: PREMIUM,
    headers: {},
    ...extra,
  });
  const state = new GatewayState({
    version: 1,
    epoch: 0,
    flags: { beta_gate_enabled: false, maintenance_mode: false },
    limits: { key: { count: 1e6, window_seconds: 1, burst: 1e6 }, ip: { count: 1e6, window_seconds: 1, burst: 1e6 } },
    endpoints: [endpoint('paid', { billing: 'prepaid' }), endpoint('postpaid', {}), endpoint('gratis', { billing: 'prepaid', premium: 0 })],
  });
  const keys: Record<string, string> = {};
  for (const account of [...ACCOUNTS, 'none']) {
    keys[account] = generateKey();
    state.putKey({
      id: `key_${account}`,
      secrets: [{ hash: hashKey(keys[account]), expires_at: null }],
      expires_at: null,
      endpoints: [],
      limit: null,
      lift: null,
      ...(account === 'none' ? {} : { account }),
    });
  }
  const control = await startBudgetControl(t, init);
  const budgets = new Budgets({
    control: new ControlEndpoints([control.url]),
    syncToken: SYNC_TOKEN,
    gatewayId: 'gw-admission',
    instance: INSTANCE,
    backlog: () => 1,
    log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } as never,
  });
  t.teardown(() => budgets.stop());
  let wants = 0;
  const proxy = createProxy({ engine });
  t.teardown(() => proxy.close());
  const handler = createHandler({
    gatewayId: 'gw-admission',
    state: () => state,
    proxy,
    journal,
    metrics,
    bodyLimitBytes: 1 << 20,
    maintenanceRetryAfterS: 1,
    trustedProxyHops: 0,
    maxHeaders: 100,
    budgets: {
      instance: budgets.instance,
      take: (account, premium) => budgets.take(account, premium),
      available: (account) => budgets.available(account),
      want: (account, premium) => {
        wants++;
        return budgets.want(account, premium);
      },
    },
  });
  const port = await listen(t, http.createServer(handler));
  return { port, control, budgets, records, upstream, metrics, wants: () => wants, keys };
}

const call = (s: Stack, account: string | null, path = '/v1/paid/x', body = '{}') =>
  request(s.port, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', ...(account === null ? {} : { authorization: `Bearer ${s.keys[account]}` }) },
    body,
  });

function cases(t: Test, engine: GatewayEngine): void {
  t.test('admits while the budget lasts, then 402 with the problem, no upstream request and no record', async (t) => {
    const s = await startPrepaid(t, engine, { funds: { acc_a: 1_200 }, step: 1_000 });
    const statuses: number[] = [];
    let refusal: Awaited<ReturnType<typeof call>> | null = null;
    for (let i = 0; i < 5; i++) {
      const got = await call(s, 'acc_a');
      statuses.push(got.status);
      if (got.status === 402) refusal ??= got;
    }
    t.same(statuses, [200, 200, 402, 402, 402], '1200 granted in all covers two premiums of 500');
    t.equal(s.upstream.hits, 2, 'refused calls never reach the upstream');
    t.equal(s.records.length, 2, 'and are never recorded');
    for (const r of s.records) t.match(r, { key_id: 'key_acc_a', endpoint_id: 'paid', reserved: PREMIUM, instance: INSTANCE });
    t.equal(s.control.granted(INSTANCE, 'acc_a'), 1_200);

    t.equal(refusal!.headers['content-type'], 'application/problem+json');
    t.equal(refusal!.headers.link, '</api/v1/account>; rel="account"');
    t.same(JSON.parse(refusal!.body), {
      type: `${PROBLEM_TYPE_BASE}svc_payment_required`,
      title: 'Payment required',
      status: 402,
      detail: 'account acc_a: this gateway holds 200 of its money, this call needs 500; deposit, then retry',
      code: 'svc_payment_required',
      required: 500,
      available: 200,
      account_id: 'acc_a',
    });
    t.match(await s.metrics.render(), /svc_gateway_rejections_total\{code="svc_payment_required"\} 3/, 'counted like every refusal');
    t.ok(s.control.requests.length <= 4, `no request per refused call (${s.control.requests.length} for 5 calls)`);
  });

  t.test('a short call asks for its need and waits; its body is forwarded whole afterwards, plain or chunked', async (t) => {
    const s = await startPrepaid(t, engine, { funds: { acc_b: 10_000 } });
    const body = 'x'.repeat(64 * 1024);
    const held = gate(s.control);
    const answer = call(s, 'acc_b', '/v1/paid/x', body);
    await waitFor(() => s.control.requests.length === 1, 'the want');
    t.same(s.control.requests[0], {
      gateway_id: 'gw-admission',
      instance: INSTANCE,
      want: [{ account: 'acc_b', need: PREMIUM }],
      held: [],
    });
    t.equal(s.upstream.hits, 0, 'nothing forwarded while the call waits');
    held.open();
    t.equal((await answer).status, 200);
    t.same(s.upstream.bodies[0], { sha: createHash('sha256').update(body).digest('hex'), length: body.length }, 'the whole body');

    // Spend what is held, then a chunked body waits for the next grant.
    while (s.budgets.take('acc_b', PREMIUM));
    const again = gate(s.control);
    const chunked = new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: s.port,
          path: '/v1/paid/y',
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${s.keys.acc_b}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.write('first,');
      setImmediate(() => req.end('second'));
    });
    await waitFor(() => s.control.requests.some((r) => r.want.some((w) => w.need === PREMIUM)) && s.wants() === 2, 'the second want');
    again.open();
    t.equal(await chunked, 200);
    t.same(s.upstream.bodies[1], { sha: createHash('sha256').update('first,second').digest('hex'), length: 12 });
    t.match(s.records[1], { reserved: PREMIUM, instance: INSTANCE });
  });

  t.test('concurrent short calls of one account share one request', async (t) => {
    const s = await startPrepaid(t, engine, { funds: { acc_c: 10_000 }, step: 5_000 });
    const held = gate(s.control);
    const calls = Array.from({ length: 10 }, () => call(s, 'acc_c'));
    await waitFor(() => s.wants() === 10, 'ten calls waiting');
    t.equal(s.control.requests.length, 1, 'one request for ten calls');
    held.open();
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    t.same(statuses, Array(10).fill(200), 'all admitted on the one grant');
    // Ten calls spent the grant; the ask ahead of need after them took the next step.
    await waitFor(() => s.budgets.available('acc_c') === 5_000, 'the second step applied');
    t.equal(s.control.granted(INSTANCE, 'acc_c'), 10_000);
    t.equal(s.control.requests.filter((r) => r.want.some((w) => w.need > 0)).length, 1, 'one want with a need');
  });

  t.test('postpaid endpoints, keyless calls, keys without an account and premium 0 are admitted as before', async (t) => {
    const s = await startPrepaid(t, engine, { funds: {} });
    const got = [
      await call(s, 'acc_d', '/v1/postpaid/x'),
      await call(s, null, '/v1/paid/x'),
      await call(s, 'none', '/v1/paid/x'),
      await call(s, 'acc_d', '/v1/gratis/x'),
    ];
    t.same(
      got.map((g) => g.status),
      [200, 200, 200, 200],
    );
    t.equal(s.control.requests.length, 0, 'control is never asked');
    t.equal(s.records.length, 4);
    for (const r of s.records) t.notOk('reserved' in r || 'instance' in r, `${r.endpoint_id} ${r.key_id}: nothing reserved`);
    t.equal((await call(s, 'acc_d')).status, 402, 'the same account on the prepaid endpoint has nothing');
  });

  t.test('a caller that leaves while waiting spends nothing and is not recorded', async (t) => {
    const s = await startPrepaid(t, engine, { funds: { acc_d: 500 } });
    const held = gate(s.control);
    const req = http.request({
      host: '127.0.0.1',
      port: s.port,
      path: '/v1/paid/x',
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${s.keys.acc_d}`, 'content-length': '10' },
    });
    req.on('error', () => undefined);
    req.write('01234');
    await waitFor(() => s.control.requests.length === 1, 'the want');
    req.destroy();
    held.open();
    // The budget the left call asked for is still whole: the next call spends it.
    await waitFor(() => s.budgets.available('acc_d') === 500, 'the grant');
    t.equal((await call(s, 'acc_d')).status, 200);
    t.equal(s.upstream.hits, 1, 'only the second call went upstream');
    t.equal(s.records.length, 1);
    t.equal(s.budgets.available('acc_d'), 0);
  });

  t.test('control down: the gateway spends what it holds and admits nothing past it', async (t) => {
    const s = await startPrepaid(t, engine, { funds: { acc_a: 100_000 }, step: 1_000 });
    t.equal((await call(s, 'acc_a')).status, 200);
    await waitFor(() => s.budgets.available('acc_a') === 1_500, 'the ask ahead of need answered');
    s.control.down = true;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(s, 'acc_a')).status);
    t.same(statuses, [200, 200, 200, 402, 402, 402], 'the 1500 held, then nothing');
    t.equal(s.upstream.hits, 4);
    t.equal(s.control.granted(INSTANCE, 'acc_a'), 2_000, 'everything admitted was granted: 4 × 500');
  });
}

for (const engine of ENGINES) t.test(engine, (t) => (cases(t, engine), Promise.resolve()));
