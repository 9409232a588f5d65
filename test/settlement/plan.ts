// The money of one batch, call by call (control/settler/plan.ts): premiums and fees, refunds,
// clamping by pool, hourly cap, per-batch and per-call caps, keyless calls and client errors.
import t from 'tap';
import { planBatch } from '../../control/settler/plan';
import { HOUR_MS, type Economics, type UnsettledCall } from '../../control/store/settlement';
import type { Outcome } from '../../protocol/outcome';

const H = Date.UTC(2030, 0, 1, 12); // the start of an hour
let seq = 0;
const call = (outcome: Outcome, key: string | null = 'a', startedAt = H, reserved: number | null = null): UnsettledCall => ({
  call_id: `c${String(++seq).padStart(4, '0')}`,
  key_id: key,
  outcome,
  started_at: startedAt,
  received_at: H,
  reserved,
});
const econ = (e: Partial<Economics> = {}): Economics => ({
  price: 1000,
  premium: 100,
  refund_cap_per_hour: 0,
  refund_cap_per_call: 0,
  refund_cap_per_batch: 0,
  treasury_fee_bps: 0,
  ...e,
});
const plan = (calls: UnsettledCall[], e: Partial<Economics> = {}, pool = 1_000_000, used: Record<number, number> = {}) =>
  planBatch({ endpointId: 'ep', calls, economics: econ(e), pool, refundedInHour: (h) => used[h] ?? 0 });

t.test('each outcome moves what docs/design.md §6 says', async (t) => {
  const calls = [
    call('ok'),
    call('latency_breach'),
    call('server_error'),
    call('network_error'),
    call('schema_mismatch'),
    call('client_error'),
  ];
  const p = plan(calls);
  t.same(p.standard, { premium: 100, owed: 1100 });
  t.equal(p.exceptions.size, 0, 'nothing clamped');
  t.same([...p.premiums], [['a', 100]]);
  t.same([...p.refunds], [['a', 4 * 1100]], 'four covered failures: price + premium each');
  t.same(p.totals, { premiums: 100, refunds: 4400, refunds_owed: 4400, clamped_calls: 0 });
  t.equal(p.treasuryFees, 0);
});

t.test('a prepaid call pays what it reserved, whatever the premium is now; a failed one pays nothing', async (t) => {
  const same = call('ok', 'a', H, 333);
  const older = call('ok', 'a', H, 200);
  const free = call('ok', 'b', H, 50);
  const failed = call('server_error', 'a', H, 333);
  const p = plan([same, older, free, failed, call('ok')], { premium: 333, treasury_fee_bps: 250 });
  t.same(
    [...p.exceptions],
    [
      [older.call_id, { premium: 200, refund: 0, refund_owed: 0, clamp: null }],
      [free.call_id, { premium: 50, refund: 0, refund_owed: 0, clamp: null }],
    ],
    'only a reservation unlike the standard premium is an exception',
  );
  t.same(
    [...p.premiums],
    [
      ['a', 333 + 200 + 333],
      ['b', 50],
    ],
  );
  t.equal(p.totals.premiums, 333 + 200 + 50 + 333);
  t.equal(p.treasuryFees, 8 + 5 + 1 + 8, 'each call’s fee from what it paid: floor(333×2.5%)=8, floor(200×2.5%)=5, floor(50×2.5%)=1');
  t.same([...p.refunds], [['a', 1333]], 'the failed prepaid call is refunded as any: price + premium');
  const none = plan([call('ok', 'a', H, 120)], { premium: 0 });
  t.same([...none.premiums], [['a', 120]], 'an endpoint whose premium is 0 now still charges what was reserved');
});

t.test('treasury fee: floor(premium × bps / 10000) per call', async (t) => {
  const p = plan([call('ok'), call('ok'), call('ok', 'b')], { premium: 333, treasury_fee_bps: 250 });
  t.equal(p.treasuryFees, 3 * 8, 'floor(333 × 0.025) = 8, per call');
  t.same([...p.premiums].sort(), [
    ['a', 666],
    ['b', 333],
  ]);
  t.equal(plan([call('ok')], { premium: 3, treasury_fee_bps: 3333 }).treasuryFees, 0, 'floor(0.9999) = 0');
  t.equal(plan([call('ok')], { premium: 100, treasury_fee_bps: 10_000 }).treasuryFees, 100, 'the whole premium at 100 %');
});

t.test('keyless calls and client errors move nothing', async (t) => {
  const p = plan([call('ok', null), call('server_error', null), call('client_error'), call('client_error', null)]);
  t.equal(p.premiums.size + p.refunds.size + p.exceptions.size, 0);
  t.same(p.totals, { premiums: 0, refunds: 0, refunds_owed: 0, clamped_calls: 0 });
});

t.test('free endpoints owe nothing', async (t) => {
  const p = plan([call('ok'), call('server_error')], { price: 0, premium: 0 });
  t.same(p.totals, { premiums: 0, refunds: 0, refunds_owed: 0, clamped_calls: 0 });
  t.equal(p.exceptions.size, 0, 'no clamp on a refund of 0');
});

t.test('a refund beyond the pool is clamped to it, and marked pool_depleted', async (t) => {
  const [a, b, c] = [call('server_error'), call('server_error'), call('server_error')];
  const p = plan([a, b, c], {}, 1500);
  t.same(p.exceptions.get(b.call_id), { premium: 0, refund: 400, refund_owed: 1100, clamp: 'pool_depleted' });
  t.same(p.exceptions.get(c.call_id), { premium: 0, refund: 0, refund_owed: 1100, clamp: 'pool_depleted' });
  t.notOk(p.exceptions.has(a.call_id), 'the first is paid in full');
  t.same(p.totals, { premiums: 0, refunds: 1500, refunds_owed: 3300, clamped_calls: 2 });
  t.same([...p.refunds], [['a', 1500]], 'never more than the pool held');
});

t.test('premiums earlier in the batch refill the pool for later refunds', async (t) => {
  const late = call('server_error');
  const p = plan([call('ok'), call('ok'), late], { treasury_fee_bps: 1000 }, 920);
  // 920 + 2 × (100 − 10) = 1100: exactly enough.
  t.notOk(p.exceptions.has(late.call_id));
  const early = call('server_error');
  const q = plan([early, call('ok'), call('ok')], { treasury_fee_bps: 1000 }, 920);
  t.same(q.exceptions.get(early.call_id)?.refund, 920, 'a refund before the premiums sees only the pool');
});

t.test('the hourly cap, per clock hour of the call start', async (t) => {
  const calls = [
    call('server_error'),
    call('server_error'),
    call('server_error'),
    call('server_error', 'a', H + HOUR_MS - 1),
    call('server_error', 'b', H + HOUR_MS),
  ];
  const p = plan(calls, { refund_cap_per_hour: 2500 }, 1_000_000, { [H / HOUR_MS]: 200 });
  // Hour H already paid 200: 1100, 1100, then 100 left, then 0; the next hour starts fresh.
  t.same(p.exceptions.get(calls[2]!.call_id), { premium: 0, refund: 100, refund_owed: 1100, clamp: 'cap_clamped' });
  t.same(p.exceptions.get(calls[3]!.call_id), { premium: 0, refund: 0, refund_owed: 1100, clamp: 'cap_clamped' });
  t.notOk(p.exceptions.has(calls[4]!.call_id), 'a new hour');
  t.same(
    [...p.refundsByHour].sort(),
    [
      [H / HOUR_MS, 2300],
      [H / HOUR_MS + 1, 1100],
    ],
    'what each hour paid in this batch',
  );
  t.same([...p.refunds].sort(), [
    ['a', 2300],
    ['b', 1100],
  ]);
  t.equal(
    plan([call('server_error')], { refund_cap_per_hour: 0 }, 1_000_000, { [H / HOUR_MS]: 1e12 }).exceptions.size,
    0,
    'cap 0 = no cap',
  );
});

t.test('when both limits bind, the smaller one names the clamp (the pool on a tie)', async (t) => {
  const c1 = call('server_error');
  t.equal(plan([c1], { refund_cap_per_hour: 500 }, 300).exceptions.get(c1.call_id)?.clamp, 'pool_depleted');
  const c2 = call('server_error');
  t.equal(plan([c2], { refund_cap_per_hour: 300 }, 500).exceptions.get(c2.call_id)?.clamp, 'cap_clamped');
  const c3 = call('server_error');
  t.equal(plan([c3], { refund_cap_per_hour: 400 }, 400).exceptions.get(c3.call_id)?.clamp, 'pool_depleted');
  t.equal(plan([c3], { refund_cap_per_hour: 400 }, 400).exceptions.get(c3.call_id)?.refund, 400);
});

t.test('the per-call cap pays each covered failure at most the cap, marked call_capped', async (t) => {
  const [a, b, ok, c] = [call('server_error'), call('latency_breach', 'b'), call('ok'), call('client_error')];
  const p = plan([a, b, ok, c], { refund_cap_per_call: 700 });
  t.same(p.exceptions.get(a.call_id), { premium: 0, refund: 700, refund_owed: 1100, clamp: 'call_capped' });
  t.same(p.exceptions.get(b.call_id), { premium: 0, refund: 700, refund_owed: 1100, clamp: 'call_capped' });
  t.notOk(p.exceptions.has(ok.call_id), 'an ok call pays its premium as ever');
  t.notOk(p.exceptions.has(c.call_id), 'a client error owes nothing');
  t.same(p.totals, { premiums: 100, refunds: 1400, refunds_owed: 2200, clamped_calls: 2 }, 'a call capped alone is a clamped call');
  t.same(
    [...p.refunds],
    [
      ['a', 700],
      ['b', 700],
    ],
  );
  const d = call('server_error');
  t.equal(plan([d], { refund_cap_per_call: 1100 }).exceptions.size, 0, 'a cap equal to the refund owed does not bind');
  t.equal(plan([d], { refund_cap_per_call: 5000 }).exceptions.size, 0, 'nor one above it');
  t.equal(plan([d], { refund_cap_per_call: 0 }).exceptions.size, 0, 'cap 0 = no cap');
  t.same(plan([d], { refund_cap_per_call: 1 }).exceptions.get(d.call_id), {
    premium: 0,
    refund: 1,
    refund_owed: 1100,
    clamp: 'call_capped',
  });
});

t.test('the per-batch cap limits the batch total across its calls, marked batch_capped', async (t) => {
  const calls = [call('server_error'), call('network_error', 'b'), call('ok'), call('server_error'), call('schema_mismatch', 'b')];
  const p = plan(calls, { refund_cap_per_batch: 2500 });
  // 1100, 1100, then 300 left of the batch's 2500, then nothing.
  t.notOk(p.exceptions.has(calls[0]!.call_id));
  t.notOk(p.exceptions.has(calls[1]!.call_id));
  t.same(p.exceptions.get(calls[3]!.call_id), { premium: 0, refund: 300, refund_owed: 1100, clamp: 'batch_capped' });
  t.same(p.exceptions.get(calls[4]!.call_id), { premium: 0, refund: 0, refund_owed: 1100, clamp: 'batch_capped' });
  t.same(p.totals, { premiums: 100, refunds: 2500, refunds_owed: 4400, clamped_calls: 2 });
  t.same(
    [...p.refunds],
    [
      ['a', 1400],
      ['b', 1100],
    ],
  );
  t.same([...p.refundsByHour], [[H / HOUR_MS, 2500]], 'what the batch paid counts for the hour');
  t.equal(plan(calls, { refund_cap_per_batch: 4400 }).exceptions.size, 0, 'a cap the batch reaches exactly does not bind');
  t.equal(plan(calls, { refund_cap_per_batch: 0 }).exceptions.size, 0, 'cap 0 = no cap');
  const q = plan(calls, { refund_cap_per_batch: 2500 }, 1_000_000, { [H / HOUR_MS]: 1e9 });
  t.equal(q.totals.refunds, 2500, 'refunds of earlier batches (in the hourly tally) do not count against a batch');
});

t.test('per-call and per-batch caps together: each call at most the per-call cap, the batch at most its cap', async (t) => {
  const calls = [call('server_error'), call('server_error'), call('server_error'), call('server_error')];
  const p = plan(calls, { refund_cap_per_call: 800, refund_cap_per_batch: 2000 });
  // 800, 800 (per call), then 400 left of the batch (smaller than 800), then 0.
  t.same(
    calls.map((c) => p.exceptions.get(c.call_id)),
    [
      { premium: 0, refund: 800, refund_owed: 1100, clamp: 'call_capped' },
      { premium: 0, refund: 800, refund_owed: 1100, clamp: 'call_capped' },
      { premium: 0, refund: 400, refund_owed: 1100, clamp: 'batch_capped' },
      { premium: 0, refund: 0, refund_owed: 1100, clamp: 'batch_capped' },
    ],
  );
  t.same(p.totals, { premiums: 0, refunds: 2000, refunds_owed: 4400, clamped_calls: 4 });
});

t.test('all four limits: the smallest names the clamp', async (t) => {
  // Each case: [pool, hour left, batch cap, call cap] and the clamp and refund of one call owed 1100.
  const cases: [number, number, number, number, string, number][] = [
    [300, 500, 600, 700, 'pool_depleted', 300],
    [900, 400, 600, 700, 'cap_clamped', 400],
    [900, 800, 500, 700, 'batch_capped', 500],
    [900, 800, 950, 600, 'call_capped', 600],
    [5000, 0, 0, 900, 'call_capped', 900],
  ];
  for (const [pool, hourCap, batchCap, callCap, clamp, refund] of cases) {
    const c = call('server_error');
    const p = plan([c], { refund_cap_per_hour: hourCap, refund_cap_per_batch: batchCap, refund_cap_per_call: callCap }, pool);
    t.same(p.exceptions.get(c.call_id), { premium: 0, refund, refund_owed: 1100, clamp }, `${pool}/${hourCap}/${batchCap}/${callCap}`);
  }
});

t.test('ties: pool_depleted, then cap_clamped, then batch_capped, then call_capped', async (t) => {
  // Each case: [pool, hourly cap, batch cap, call cap] all binding at 500 or more, and the clamp.
  const cases: [number, number, number, number, string][] = [
    [500, 500, 500, 500, 'pool_depleted'],
    [500, 0, 0, 500, 'pool_depleted'],
    [500, 0, 500, 0, 'pool_depleted'],
    [900, 500, 500, 500, 'cap_clamped'],
    [900, 500, 0, 500, 'cap_clamped'],
    [900, 500, 500, 0, 'cap_clamped'],
    [900, 600, 500, 500, 'batch_capped'],
    [900, 0, 500, 500, 'batch_capped'],
    [900, 600, 700, 500, 'call_capped'],
  ];
  for (const [pool, hourCap, batchCap, callCap, clamp] of cases) {
    const c = call('server_error');
    const p = plan([c], { refund_cap_per_hour: hourCap, refund_cap_per_batch: batchCap, refund_cap_per_call: callCap }, pool);
    t.same(p.exceptions.get(c.call_id), { premium: 0, refund: 500, refund_owed: 1100, clamp }, `${pool}/${hourCap}/${batchCap}/${callCap}`);
  }
  // A tie of what is left: the hour has 300 left and the batch 300 left after a first call.
  const [a, b] = [call('server_error'), call('server_error')];
  const p = plan([a, b], { refund_cap_per_hour: 1400, refund_cap_per_batch: 1400 });
  t.same(p.exceptions.get(b.call_id), { premium: 0, refund: 300, refund_owed: 1100, clamp: 'cap_clamped' });
});

t.test('the pool and the hourly cap across a batch capped per call and per batch', async (t) => {
  const calls = [call('server_error'), call('ok'), call('server_error'), call('server_error', 'a', H + HOUR_MS), call('server_error')];
  const p = plan(calls, { refund_cap_per_hour: 1500, refund_cap_per_batch: 2100, refund_cap_per_call: 900 }, 1000);
  // 900 (call cap; pool 1000 → 100, then + 100 premium → 200), 200 (pool), next hour: 0 (pool);
  // then the pool is empty, so every later call is pool_depleted.
  t.same(
    calls.map((c) => p.exceptions.get(c.call_id)?.clamp ?? null),
    ['call_capped', null, 'pool_depleted', 'pool_depleted', 'pool_depleted'],
  );
  t.same(
    calls.map((c) => p.exceptions.get(c.call_id)?.refund ?? null),
    [900, null, 200, 0, 0],
  );
  t.same(p.totals, { premiums: 100, refunds: 1100, refunds_owed: 4400, clamped_calls: 4 });
});

t.test('nothing is ever negative', async (t) => {
  for (let pool = 0; pool < 3000; pool += 250) {
    const p = plan(
      [call('server_error'), call('ok'), call('network_error'), call('latency_breach')],
      { refund_cap_per_hour: 1500, refund_cap_per_batch: 2000, refund_cap_per_call: 900, treasury_fee_bps: 500 },
      pool,
    );
    const refunds = [...p.refunds.values()].reduce((a, b) => a + b, 0);
    t.ok(refunds <= pool + p.totals.premiums - p.treasuryFees, `pool ${pool}: refunds within what the pool had`);
    for (const e of p.exceptions.values()) t.ok(e.refund >= 0 && e.refund < e.refund_owed);
  }
});
