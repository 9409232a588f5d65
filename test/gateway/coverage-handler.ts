/**
 * Coverage in the request pipeline (`gateway/request/handler.ts`, the cover stage, and
 * `record.ts`), on each proxy engine, with a `Coverage` fed lines by the test: a covered keyed
 * call answers `X-Svc-Coverage: covered` with the usual premium and refund and its record has no
 * `coverage`; past the allowance (or paused) a keyed call is forwarded all the same, answers
 * `none` with premium 0 and refund 0, and its record says `coverage: 'none'`; a keyless call
 * answers `none`. On a prepaid endpoint an uncovered call never touches the budget (no 402 even
 * without one). The allowance holds exactly as many failures as it has room for, however many
 * calls are in flight; calls that end well give their part back; under an older control,
 * failures carried over to a new line count until they are CARRY_MS old. With a count on the
 * lines, each failure is counted under its call id until its record is acked and a line reflects
 * it, however old it is, then as long again.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import type { Journal } from '../../gateway/journal/journal';
import { GatewayMetrics } from '../../gateway/metrics';
import { createProxy } from '../../gateway/proxy/index';
import { createHandler } from '../../gateway/request/handler';
import { CARRY_MAX_MS, CARRY_MS, Coverage } from '../../gateway/state/coverage';
import { GatewayState } from '../../gateway/state/state';
import { generateKey, hashKey } from '../../protocol/keys';
import type { OutcomeRecord } from '../../protocol/outcome';
import type { SnapshotEndpoint } from '../../protocol/snapshot';
import { manualClock } from '../fixtures/control';
import { ENGINES, listen, request, waitFor, type GatewayEngine } from './fixtures/harness.cts';

const PRICE = 1_000;
const PREMIUM = 100;
/** What one covered failure is refunded, and holds of the allowance. */
const CALL = PRICE + PREMIUM;
const INSTANCE = 'inst-coverage-test';

interface Stack {
  port: number;
  coverage: Coverage;
  clock: ReturnType<typeof manualClock>;
  records: OutcomeRecord[];
  upstreamHits: () => number;
  /** Calls of the budget's take, want and available, and the money it holds. */
  budget: { touched: number; funds: number };
  key: string;
  /** A key whose account has a (prepaid) budget. */
  accountKey: string;
}

async function start(t: Test, engine: GatewayEngine): Promise<Stack> {
  let hits = 0;
  const upstreamPort = await listen(
    t,
    http.createServer((req, res) => {
      hits++;
      req.resume();
      req.on('end', () => {
        const failing = (req.url ?? '').endsWith('/fail');
        res.writeHead(failing ? 500 : 200, { 'content-type': 'application/json' }).end(failing ? '{"error":"boom"}' : '{"ok":true}');
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
    keys: () => 2,
  });
  const endpoint = (id: string, extra: Partial<SnapshotEndpoint> = {}): SnapshotEndpoint => ({
    id,
    upstream: `http://127.0.0.1:${upstreamPort}/base`,
    methods: ['POST'],
    timeout_ms: 5_000,
    sla_ms: 5_000,
    price: PRICE,
    premium: PREMIUM,
    headers: {},
    ...extra,
  });
  const state = new GatewayState({
    version: 1,
    epoch: 0,
    flags: { beta_gate_enabled: false, maintenance_mode: false },
    limits: { key: { count: 1e6, window_seconds: 1, burst: 1e6 }, ip: { count: 1e6, window_seconds: 1, burst: 1e6 } },
    endpoints: [endpoint('ep'), endpoint('paid', { billing: 'prepaid' })],
  });
  const key = generateKey();
  const accountKey = generateKey();
  for (const [id, secret, account] of [
    ['key_a', key, null],
    ['key_acc', accountKey, 'acc_a'],
  ] as const) {
    state.putKey({
      id,
      secrets: [{ hash: hashKey(secret), expires_at: null }],
      expires_at: null,
      endpoints: [],
      limit: null,
      lift: null,
      ...(account === null ? {} : { account }),
    });
  }
  const budget = { touched: 0, funds: 0 };
  const clock = manualClock();
  const coverage = new Coverage(clock.now);
  const proxy = createProxy({ engine });
  t.teardown(() => proxy.close());
  const handler = createHandler({
    gatewayId: 'gw-coverage',
    state: () => state,
    proxy,
    journal,
    metrics,
    bodyLimitBytes: 1 << 20,
    maintenanceRetryAfterS: 1,
    trustedProxyHops: 0,
    maxHeaders: 100,
    coverage,
    budgets: {
      instance: INSTANCE,
      take: (_account, premium) => {
        budget.touched++;
        if (budget.funds < premium) return false;
        budget.funds -= premium;
        return true;
      },
      // Never waits: a call the budget does not cover is refused at once.
      want: () => (budget.touched++, null),
      available: () => (budget.touched++, budget.funds),
    },
  });
  const port = await listen(t, http.createServer(handler));
  return { port, coverage, clock, records, upstreamHits: () => hits, budget, key, accountKey };
}

type Answer = Awaited<ReturnType<typeof request>>;

const call = (s: Stack, path: string, key: string | null = s.key): Promise<Answer> =>
  request(s.port, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body: '{}',
  });

/** The journal record of an answer (there is exactly one per forwarded call). */
async function recordOf(s: Stack, res: Answer): Promise<OutcomeRecord> {
  const id = String(res.headers['x-svc-call-id']);
  return waitFor(() => s.records.find((r) => r.call_id === id), `the record of call ${id}`);
}

/** The settlement headers of an answer: coverage, premium, refund. */
const money = (res: Answer) => [res.headers['x-svc-coverage'], res.headers['x-svc-premium'], res.headers['x-svc-refund']];

const line = (allowance: number, covered = true) => ({ type: 'coverage', covered, allowance });

function cases(t: Test, engine: GatewayEngine): void {
  t.test('before any line every keyed call is covered', async (t) => {
    const s = await start(t, engine);
    for (let i = 0; i < 3; i++) t.same(money(await call(s, '/v1/ep/fail')), ['covered', '0', String(CALL)]);
    t.equal(s.coverage.state, null);
  });

  t.test('covered while the allowance lasts, then forwarded uncovered: headers and records', async (t) => {
    const s = await start(t, engine);
    s.coverage.apply(line(2 * CALL));

    const ok = await call(s, '/v1/ep/ok');
    t.equal(ok.status, 200);
    t.same(money(ok), ['covered', String(PREMIUM), '0'], 'a covered ok call pays the premium');
    t.equal(ok.headers['x-svc-settlement-pending'], '1');
    const okRecord = await recordOf(s, ok);
    t.match(okRecord, { key_id: 'key_a', endpoint_id: 'ep', outcome: 'ok' });
    t.notOk('coverage' in okRecord, 'a covered record has no coverage field');
    // The call ends (and gives its part back) once the proxy is done with it, maybe after the answer.
    await waitFor(() => s.coverage.state!.held === 0, 'the ok call to give its part back');

    for (let i = 0; i < 2; i++) {
      const failed = await call(s, '/v1/ep/fail');
      t.equal(failed.status, 500);
      t.same(money(failed), ['covered', '0', String(CALL)], `covered failure ${i + 1}: refund price + premium`);
      t.notOk('coverage' in (await recordOf(s, failed)));
    }
    t.equal(s.coverage.state!.held, 2 * CALL, 'both failures spent');

    const uncovered = await call(s, '/v1/ep/fail');
    t.equal(uncovered.status, 500, 'forwarded all the same');
    t.equal(uncovered.headers['x-svc-outcome'], 'server_error');
    t.same(money(uncovered), ['none', '0', '0'], 'an uncovered failure is refunded nothing');
    t.equal(uncovered.headers['x-svc-settlement-pending'], '1');
    const uncoveredRecord = await recordOf(s, uncovered);
    t.match(uncoveredRecord, {
      call_id: uncovered.headers['x-svc-call-id'],
      key_id: 'key_a',
      endpoint_id: 'ep',
      method: 'POST',
      status: 500,
      outcome: 'server_error',
      latency_ms: Number,
      started_at: String,
      gateway_id: 'gw-coverage',
      coverage: 'none',
    });
    t.same(
      Object.keys(uncoveredRecord).sort(),
      ['call_id', 'coverage', 'endpoint_id', 'gateway_id', 'key_id', 'latency_ms', 'method', 'outcome', 'started_at', 'status'],
      'and nothing else',
    );

    const uncoveredOk = await call(s, '/v1/ep/ok');
    t.same(money(uncoveredOk), ['none', '0', '0'], 'an uncovered ok call pays no premium');
    t.match(await recordOf(s, uncoveredOk), { outcome: 'ok', coverage: 'none' });

    const keyless = await call(s, '/v1/ep/fail', null);
    t.same(money(keyless), ['none', '0', '0'], 'a keyless call is never covered');
    const keylessRecord = await recordOf(s, keyless);
    t.equal(keylessRecord.key_id, null);
    t.notOk('coverage' in keylessRecord, 'a keyless record stays as it was');

    t.equal(s.upstreamHits(), 6, 'every call reached the upstream');
    t.equal(s.coverage.state!.held, 2 * CALL, 'uncovered calls hold nothing');
  });

  t.test('paused: every keyed call uncovered, and a prepaid one forwarded without touching the budget', async (t) => {
    const s = await start(t, engine);
    s.coverage.apply(line(100 * CALL, false));
    const paid = await call(s, '/v1/paid/ok', s.accountKey);
    t.equal(paid.status, 200, 'no 402 though the account has no budget');
    t.same(money(paid), ['none', '0', '0']);
    const record = await recordOf(s, paid);
    t.match(record, { key_id: 'key_acc', endpoint_id: 'paid', coverage: 'none' });
    t.notOk('reserved' in record || 'instance' in record, 'nothing reserved');
    t.same(money(await call(s, '/v1/ep/fail')), ['none', '0', '0'], 'postpaid failures too');
    t.equal(s.budget.touched, 0, 'the budget was never asked');

    // Covered again: the prepaid call must pay, and the account has nothing.
    s.coverage.apply(line(CALL));
    const refused = await call(s, '/v1/paid/ok', s.accountKey);
    t.equal(refused.status, 402);
    t.match(JSON.parse(refused.body), { code: 'svc_payment_required', required: PREMIUM, available: 0 });
    t.ok(s.budget.touched > 0, 'a covered call asks the budget');
    t.equal(s.coverage.state!.held, 0, 'the refused call gave its part of the allowance back');
    s.budget.funds = PREMIUM;
    const covered = await call(s, '/v1/paid/fail', s.accountKey);
    t.same(money(covered), ['covered', '0', String(CALL)]);
    t.match(await recordOf(s, covered), { reserved: PREMIUM, instance: INSTANCE });
    t.equal(s.budget.funds, 0, 'it spent the premium');
    t.equal(s.upstreamHits(), 3, 'the refused call never went upstream');
  });

  t.test('an allowance for exactly N failures: N + k calls in flight at once, exactly N covered', async (t) => {
    const s = await start(t, engine);
    const N = 5;
    const K = 7;
    // Room for N failures and part of another.
    s.coverage.apply(line(N * CALL + CALL - 1));
    const answers = await Promise.all(Array.from({ length: N + K }, () => call(s, '/v1/ep/fail')));
    const coverage = answers.map((a) => a.headers['x-svc-coverage']);
    t.equal(coverage.filter((c) => c === 'covered').length, N, `${N} covered`);
    t.equal(coverage.filter((c) => c === 'none').length, K, `${K} uncovered`);
    t.equal(s.upstreamHits(), N + K, 'every call was forwarded');
    await waitFor(() => s.records.length === N + K, 'every record');
    t.equal(s.records.filter((r) => r.coverage === 'none').length, K, 'the records agree with the answers');
    t.equal(s.coverage.state!.held, N * CALL);
    const refunds = answers.reduce((sum, a) => sum + Number(a.headers['x-svc-refund']), 0);
    t.equal(refunds, N * CALL, 'the refunds promised fit the allowance');

    // A new line from control, which has seen the first failures only: all of them stay counted.
    s.clock.advance(1_000);
    s.coverage.apply(line(3 * CALL));
    t.equal((await call(s, '/v1/ep/fail')).headers['x-svc-coverage'], 'none', 'the recent failures are carried over');
    // Control has them all by now: once CARRY_MS old, the line's allowance is whole again.
    s.clock.advance(CARRY_MS);
    const again = await Promise.all(Array.from({ length: 5 }, () => call(s, '/v1/ep/fail')));
    t.same(
      again.map((a) => a.headers['x-svc-coverage']).sort(),
      ['covered', 'covered', 'covered', 'none', 'none'],
      'three covered again, then none',
    );
  });

  t.test('with a count: failures held under their call ids until acked and reflected, however old', async (t) => {
    const s = await start(t, engine);
    const seen = (seq: number) => ({ type: 'ingested' as const, instance: 'ctl-x', seq });
    s.coverage.apply(line(2 * CALL), seen(0));
    const failed = await Promise.all([call(s, '/v1/ep/fail'), call(s, '/v1/ep/fail')]);
    t.same(
      failed.map((a) => a.headers['x-svc-coverage']),
      ['covered', 'covered'],
    );
    t.equal((await call(s, '/v1/ep/fail')).headers['x-svc-coverage'], 'none', 'the allowance is spent');
    s.clock.advance(10 * CARRY_MS);
    s.coverage.apply(line(2 * CALL), seen(3));
    t.equal((await call(s, '/v1/ep/fail')).headers['x-svc-coverage'], 'none', 'not acked: still spent, however old');
    const ids = failed.map((a) => String(a.headers['x-svc-call-id']));
    s.coverage.acked(ids, { accepted: 2, duplicates: 0, ingest_seq: 4, ingest_instance: 'ctl-x' });
    t.equal(s.coverage.state!.held, 2 * CALL, 'acked with 4; the line had ingested 3');
    s.coverage.apply(line(CALL), seen(4));
    t.equal(s.coverage.state!.held, 2 * CALL, 'proven; counted as long again as that took, for the other gateways');
    s.clock.advance(CARRY_MAX_MS);
    t.equal(s.coverage.state!.held, 0, "the records' call ids were the ones counted");
    t.same(money(await call(s, '/v1/ep/fail')), ['covered', '0', String(CALL)]);
  });

  t.test('calls that end well give their part back: an allowance of one call covers any number of them', async (t) => {
    const s = await start(t, engine);
    s.coverage.apply(line(CALL));
    for (let i = 0; i < 5; i++) {
      t.equal((await call(s, '/v1/ep/ok')).headers['x-svc-coverage'], 'covered');
      await waitFor(() => s.coverage.state!.held === 0, 'the call to give its part back');
    }
    t.equal((await call(s, '/v1/ep/fail')).headers['x-svc-coverage'], 'covered', 'and then one failure');
    t.same(money(await call(s, '/v1/ep/ok')), ['none', '0', '0'], 'after which nothing is covered');
  });
}

for (const engine of ENGINES) t.test(engine, (t) => (cases(t, engine), Promise.resolve()));
