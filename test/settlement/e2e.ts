/**
 * Settlement end to end with real processes: `svcctl serve control` and `svcctl serve
 * gateway` from the built CLI, a test upstream that answers 200, 500, resets, hangs past the
 * timeout, is slower than the SLA, returns JSON that breaks the endpoint's schema, or 4xx.
 * Calls go through the gateway with two keys (and without one); once the gateway's journal
 * is empty, `svcctl settler run-once` settles them and every balance equals a hand count.
 */
import t from 'tap';
import { GENEROUS_LIMITS, drained, metrics as getMetrics, request, startStack } from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';
import { keyLedger } from '../fixtures/ledger';

const SOL = 'So11111111111111111111111111111111111111112';
const SCHEMA = { type: 'object', required: ['id'], properties: { id: { type: 'integer', minimum: 1 } } };

t.test('outcomes through the gateway settle to hand-computed balances', async (t) => {
  const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS });
  const up = await startUpstream(t);
  up.on('/base/ok', ok({ body: { fine: true } }));
  up.on('/base/fail', ok({ status: 500, body: { error: 'boom' } }));
  up.on('/base/reset', { kind: 'reset-before-headers' });
  up.on('/base/hang', { kind: 'hang' });
  up.on('/base/slow', ok({ delayMs: 1_300 }));
  up.on('/base/client', ok({ status: 404, body: { error: 'no such thing' } }));
  up.on('/typed/good', ok({ body: { id: 7 } }));
  up.on('/typed/bad', ok({ body: { id: 'seven' } }));

  // plain: premium 150, refund 2150, fee floor(150 × 10 %) = 15. typed: premium 100, refund 1100.
  await stack.addEndpoint({
    id: 'plain',
    upstream: `${up.url}/base`,
    price: 2000,
    premium: 150,
    sla_ms: 1_000,
    timeout_ms: 3_000,
    treasury_fee_bps: 1000,
  });
  const version = await stack.addEndpoint({
    id: 'typed',
    upstream: `${up.url}/typed`,
    price: 1000,
    premium: 100,
    sla_ms: 5_000,
    timeout_ms: 5_000,
    response_schema: SCHEMA,
  });
  const a = await stack.issueKey({ name: 'agent a', wallet: SOL });
  const b = await stack.issueKey({ name: 'agent b' });
  await stack.applied(Math.max(version, b.version));

  const paused = await stack.cli(['settler', 'pause', '--json']);
  t.equal(paused.code, 0, paused.stderr);
  const funded = await stack.cli(['pool', 'fund', '0.5', '--json']);
  t.equal(funded.code, 0, funded.stderr);
  t.equal(funded.json().amount, 500_000, '0.5 units = 500000 micro');

  const sent: { path: string; key: string | null; outcome: string; headers: Record<string, unknown> }[] = [];
  const call = async (path: string, key: string | null, want: string) => {
    const res = await request(stack.gateway, `/v1/${path}`, {
      body: '{}',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    });
    sent.push({ path, key, outcome: want, headers: res.headers });
    return res;
  };
  const plan: [string, string | null, string, number][] = [
    ['plain/ok', a.key, 'ok', 3],
    ['plain/fail', a.key, 'server_error', 1],
    ['plain/reset', a.key, 'network_error', 1],
    ['plain/hang', a.key, 'network_error', 1],
    ['plain/slow', a.key, 'latency_breach', 1],
    ['plain/client', a.key, 'client_error', 1],
    ['typed/good', a.key, 'ok', 2],
    ['typed/bad', a.key, 'schema_mismatch', 1],
    ['plain/ok', b.key, 'ok', 1],
    ['plain/fail', b.key, 'server_error', 2],
    ['typed/bad', b.key, 'schema_mismatch', 1],
    ['plain/fail', null, 'server_error', 1],
    ['plain/ok', null, 'ok', 1],
  ];
  await Promise.all(
    plan.map(async ([path, key, want, times]) => {
      for (let i = 0; i < times; i++) await call(path, key, want);
    }),
  );
  t.equal(sent.length, 17);

  const headerOf = (path: string, key: string | null) => sent.find((s) => s.path === path && s.key === key)!.headers;
  t.match(headerOf('plain/slow', a.key), {
    'x-svc-outcome': 'latency_breach',
    'x-svc-refund': '2150',
    'x-svc-premium': '0',
    'x-svc-settlement-pending': '1',
  });
  t.match(headerOf('plain/hang', a.key), { 'x-svc-outcome': 'network_error', 'x-svc-refund': '2150' });
  t.match(headerOf('plain/ok', b.key), { 'x-svc-outcome': 'ok', 'x-svc-premium': '150', 'x-svc-refund': '0' });
  t.match(headerOf('typed/bad', a.key), { 'x-svc-outcome': 'ok', 'x-svc-premium': '100' }, 'a schema verdict comes after the head');
  t.match(headerOf('plain/fail', null), { 'x-svc-refund': '0', 'x-svc-premium': '0' }, 'keyless calls settle nothing');

  await drained(stack.gateway);
  const rows = stack.outcomes();
  t.equal(rows.length, 17, 'every call reached control once');
  for (const s of sent) {
    const row = rows.find((r) => r.call_id === s.headers['x-svc-call-id']);
    t.equal(row?.outcome, s.outcome, `${s.path}: recorded as ${s.outcome}`);
  }

  const status = (await stack.cli(['settler', 'status', '--json'])).json();
  t.match(status, { state: 'paused', backlog: 17 });
  const run = await stack.cli(['settler', 'run-once', '--json']);
  t.equal(run.code, 0, run.stderr);
  const settled = run.json();
  t.equal(settled.calls, 17);
  t.same(settled.batches.map((x: { endpoint_id: string }) => x.endpoint_id).sort(), ['plain', 'typed'], 'one batch per endpoint');
  t.equal(settled.backlog, 0);

  const balances = Object.fromEntries(
    ((await stack.cli(['ledger', 'balances', '--json'])).json().balances as { account: string; balance: number }[]).map((x) => [
      x.account,
      x.balance,
    ]),
  );
  // a: −3×150 + 4×2150 (fail, reset, hang, slow) − 2×100 + 1100 = 9050
  // b: −150 + 2×2150 + 1100 = 5250
  // treasury: 4 plain ok × 15 = 60; pool: 500000 + 800 − 60 − 15100 = 485640
  t.same(balances, { external: -500_000, pool: 485_640, treasury: 60, [keyLedger(a.id)]: 9050, [keyLedger(b.id)]: 5250 });
  const pool = (await stack.cli(['pool', 'show', '--json'])).json();
  t.match(pool, {
    pool: 485_640,
    funded: 500_000,
    premiums: 800,
    treasury_fees: 60,
    refunds: 15_100,
    refunds_owed: 15_100,
    shortfall: 0,
    settled_calls: 17,
    settled_batches: 2,
    backlog: 0,
  });

  const payouts = (await stack.cli(['payouts', 'list', '--json'])).json();
  t.same(
    payouts.payouts.map((p: { wallet: string | null; owed: number }) => [p.wallet, p.owed]),
    [
      [SOL, 9050],
      [null, 5250],
    ],
  );

  const verify = await stack.cli(['ledger', 'verify']);
  t.equal(verify.code, 0, verify.stderr);
  t.match(verify.stdout, /^Ledger OK/);

  const again = await stack.cli(['settler', 'run-once', '--json']);
  t.same(again.json().batches, [], 'nothing is settled twice');
  const metrics = await getMetrics(stack.gateway, stack.metricsToken());
  t.match(metrics.text, /svc_gateway_schema_checks_total\{endpoint="typed",result="invalid"\} 2/);
  t.match(metrics.text, /svc_gateway_schema_checks_total\{endpoint="typed",result="valid"\} 2/);
});
