/**
 * How control divides the pool's free capital among the gateways (control/sync/shares.ts
 * `coverageAllowance`, written by the hub as each gateway's `coverage` line): by weight, in
 * whole calls (the largest covered call), the calls left over one each to the largest
 * remainders, then by id. The parts never add up to more than the free capital, and whenever it
 * holds one call some gateway can cover it. Then the lines themselves, on both stores, to two
 * hand-written gateways: an odd number of calls, a weight, and a pause.
 */
import t from 'tap';
import type { Connection } from '../../control/sync/connection';
import { COVERAGE_REFRESH_MS, writeCoverageLine } from '../../control/sync/side-lines';
import { POOL_PAUSED_META } from '../../control/pool-pause';
import { coverageAllowance, type Member } from '../../control/sync/shares';
import type { CoverageLine } from '../../protocol/snapshot';
import { startTestControl } from '../fixtures/control';
import { keepRenewing, liveGateway, type FakeGateway } from '../fixtures/fake-gateway';
import { waitFor } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';

const CALL = 1_100;
const pair: Member[] = [
  { id: 'gw-a', weight: 1 },
  { id: 'gw-b', weight: 1 },
];
const all = (free: number, unit: number, members: Member[]) => members.map((m) => coverageAllowance(free, unit, members, m.id));

t.test('whole calls by weight, the calls left over to the largest remainders', async (t) => {
  t.same(all(20 * CALL, CALL, pair), [10 * CALL, 10 * CALL], 'an even number of calls: halves');
  t.same(all(21 * CALL, CALL, pair), [11 * CALL, 10 * CALL], 'an odd one: the call left over to the first by id');
  t.same(all(CALL, CALL, pair), [CALL, 0], 'the last call: one gateway can cover it (halves of it, neither could)');
  t.same(all(CALL + 550, CALL, pair), [CALL + 275, 275], 'what is less than a call: by weight');
  t.same(all(CALL - 1, CALL, pair), [549, 549], 'less than a call in all: by weight, and no gateway covers a whole call');
  const weighted: Member[] = [
    { id: 'gw-a', weight: 1 },
    { id: 'gw-b', weight: 2 },
  ];
  t.same(all(CALL, CALL, weighted), [0, CALL], 'the larger remainder wins over the id');
  t.same(all(21 * CALL, CALL, weighted), [7 * CALL, 14 * CALL]);
  t.same(all(10 * CALL, 0, weighted), [3_666, 7_333], 'no priced endpoint: by weight alone');
  t.equal(coverageAllowance(5 * CALL, CALL, weighted, 'gw-c'), 0, 'not a member: nothing');
  t.same(
    all(5 * CALL, CALL, [
      { id: 'gw-a', weight: 0 },
      { id: 'gw-b', weight: 1 },
    ]),
    [0, 5 * CALL],
    'weight 0: nothing',
  );
  t.same(all(0, CALL, pair), [0, 0]);
  t.same(all(-CALL, CALL, pair), [0, 0], 'no free capital: nothing');
});

t.test('never more than the free capital; some gateway can cover whenever it holds a call', async (t) => {
  // A fixed sequence, so a failure names a case that can be run again.
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const broken: string[] = [];
  for (let i = 0; i < 2_000; i++) {
    const members = Array.from({ length: 1 + random(6) }, (_, j) => ({ id: `gw-${j}`, weight: random(4) === 0 ? 0 : 1 + random(100) }));
    const unit = random(10) === 0 ? 0 : 1 + random(5_000);
    const free = random(200_000);
    const parts = all(free, unit, members);
    const sum = parts.reduce((a, b) => a + b, 0);
    const weighted = members.some((m) => m.weight > 0);
    if (
      sum > free ||
      parts.some((p) => p < 0 || !Number.isInteger(p)) ||
      (weighted && unit > 0 && free >= unit && parts.every((p) => p < unit))
    )
      broken.push(JSON.stringify({ free, unit, members, parts }));
  }
  t.same(broken, []);
});

t.test('a coverage line is written when it changes, and again every COVERAGE_REFRESH_MS though it did not', async (t) => {
  const written: string[] = [];
  const conn = {
    gatewayId: 'gw-a',
    closed: false,
    coverageLine: null,
    coverageAt: 0,
    res: { write: (line: string) => written.push(line) },
  };
  const members = [{ id: 'gw-a', weight: 1 }];
  const coverage = { paused: false, manual: false, automatic: false, free: 5 * CALL, min_free: CALL, largest_call: CALL };
  const write = (c: typeof coverage, now: number) =>
    writeCoverageLine(conn as unknown as Connection, { coverage: c, seen: null }, members, now);
  write(coverage, 1_000);
  write(coverage, 1_000 + COVERAGE_REFRESH_MS - 1);
  t.equal(written.length, 1, 'the same line within the interval: written once');
  write(coverage, 1_000 + COVERAGE_REFRESH_MS);
  t.equal(written.length, 2, 'written again once the interval passed');
  t.equal(written[1], written[0], 'the same line');
  write({ ...coverage, free: 4 * CALL }, 1_000 + COVERAGE_REFRESH_MS + 1);
  t.equal(written.length, 3, 'a change is written at once');
  t.same(JSON.parse(written[2]!), { type: 'coverage', covered: true, allowance: 4 * CALL });
  conn.closed = true;
  write(coverage, 1_000 + 3 * COVERAGE_REFRESH_MS);
  t.equal(written.length, 3, 'nothing on a closed stream');
});

forEachStore(t, (t, kind) => {
  t.test('the lines: an odd number of calls, then a weight, then a pause', async (t) => {
    const control = await startTestControl(t, { store: kind, coverageCheckMs: 3_600_000, flags: { 'sync.leaseS': 1 } });
    const gateways: FakeGateway[] = [];
    for (const id of ['gw-a', 'gw-b']) {
      const gw = await liveGateway(t, control, id);
      keepRenewing(t, control, gw);
      gateways.push(gw);
    }
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 21 * CALL })).status, 201);
    const added = await control.admin('POST', '/_admin/v1/endpoints', {
      id: 'ep',
      upstream: 'http://127.0.0.1:9/x',
      price: 1_000,
      premium: 100,
    });
    t.equal(added.status, 201, added.text);
    const lines = async (what: string, expected: Omit<CoverageLine, 'type'>[]) => {
      // Both gateways live: each is counted in the other's division.
      await waitFor(
        async () => (await control.admin('GET', '/_admin/v1/gateways')).body.gateways.every((g: { live: boolean }) => g.live),
        'both live',
      );
      await control.handle.coverage.runOnce();
      await waitFor(
        () => gateways.every((gw, i) => JSON.stringify(gw.coverage.at(-1)) === JSON.stringify({ type: 'coverage', ...expected[i] })),
        `${what}: ${JSON.stringify(expected)}; got ${JSON.stringify(gateways.map((gw) => gw.coverage.at(-1)))}`,
      ).catch((err: unknown) => t.fail(String(err)));
      t.pass(what);
    };
    await lines('21 calls: 11 and 10', [
      { covered: true, allowance: 11 * CALL },
      { covered: true, allowance: 10 * CALL },
    ]);
    t.equal((await control.admin('PUT', '/_admin/v1/gateways/gw-b/weight', { weight: 2 })).status, 200);
    await lines('weighted 1:2: 7 and 14', [
      { covered: true, allowance: 7 * CALL },
      { covered: true, allowance: 14 * CALL },
    ]);
    await control.handle.ctx.store.setMeta(POOL_PAUSED_META, 1);
    await lines('paused: nothing', [
      { covered: false, allowance: 0 },
      { covered: false, allowance: 0 },
    ]);
  });
});
