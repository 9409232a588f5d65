// Refunds beyond the pool and beyond an endpoint's hourly cap: clamped, marked on each call,
// reported by pool show and the indexer totals, never negative, never silently dropped.
import t, { type Test } from 'tap';
import type { SqliteStore } from '../../control/store';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { outcome } from '../fixtures/settlement';
import { forEachStore } from '../fixtures/stores';
import { Pool } from 'pg';
import { PgConn } from '../../control/store/pg/conn';
import type { OutcomeRecord } from '../../protocol/outcome';

const HOUR = 3_600_000;

async function ship(control: TestControl, records: OutcomeRecord[]): Promise<void> {
  const res = await control.request(`${control.urls.control}/_sync/v1/outcomes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${control.syncToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ gateway_id: 'gw-test', records }),
  });
  if (res.status !== 200) throw new Error(`ship: ${res.status} ${res.text}`);
}

interface StoredCall {
  endpoint_id: string;
  started_at: number;
  outcome: string;
  premium: number;
  refund: number;
  refund_owed: number;
  clamp: string | null;
}

/** The stored row of each of `records`, in their order; fails unless control holds exactly these calls. */
async function rowsOf(t: Test, control: TestControl, records: OutcomeRecord[]): Promise<StoredCall[]> {
  const store = control.handle.ctx.store;
  t.equal(await store.outcomes.count(), records.length, 'control holds the calls shipped, no other');
  return Promise.all(
    records.map(async (r) => {
      const row = await store.outcomes.byCallId(r.call_id);
      if (row === undefined) throw new Error(`no stored call ${r.call_id}`);
      return row as unknown as StoredCall;
    }),
  );
}

/** Add endpoint `id` (price 1000, premium 100) through svcctl, with `cap` as its hourly refund cap if given. */
function addEndpoint(control: TestControl, id: string, cap?: string) {
  const args = ['endpoints', 'add', id, '--upstream', 'http://127.0.0.1:9/x', '--price', '1000', '--premium', '100'];
  return runCli(cap === undefined ? args : [...args, '--refund-cap-per-hour', cap], { control });
}

forEachStore(t, (t, kind) => {
  t.test('a pool too small for the refunds: paid to zero, the rest recorded as shortfall', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now, flags: { 'settler.cadenceMs': 3_600_000 } });
    const cli = (...args: string[]) => runCli(args, { control });
    t.equal((await addEndpoint(control, 'ep')).code, 0);
    await cli('pool', 'fund', '5000');
    const t0 = clock.now();
    // Shipped in call start order.
    const shipped = Array.from({ length: 7 }, (_, i) => outcome({ outcome: 'server_error', started: t0 + i }));
    await ship(control, shipped);
    const run = await cli('settler', 'run-once', '--json');
    t.match(run.json(), { calls: 7, refunds: 5000, refunds_owed: 7700, clamped_calls: 3 });

    t.same(
      (await rowsOf(t, control, shipped)).map((r) => [r.refund, r.refund_owed, r.clamp]),
      [
        [1100, 1100, null],
        [1100, 1100, null],
        [1100, 1100, null],
        [1100, 1100, null],
        [600, 1100, 'pool_depleted'],
        [0, 1100, 'pool_depleted'],
        [0, 1100, 'pool_depleted'],
      ],
      'each call carries what it was owed and what it got',
    );
    const pool = (await cli('pool', 'show', '--json')).json();
    t.match(pool, {
      pool: 0,
      refunds: 5000,
      refunds_owed: 7700,
      shortfall: 2700,
      clamped: { pool_depleted: 3, cap_clamped: 0 },
      owed_to_keys: 5000,
    });
    const human = await cli('pool', 'show');
    t.match(human.stdout, /shortfall: +0\.0027 \(2700 micro\) \(3 calls pool_depleted, 0 cap_clamped, 0 batch_capped, 0 call_capped\)/);
    t.match(await control.handle.ctx.store.ledger.totals(), { pool_size: 0, total_refunds: 5000, total_refunds_owed: 7700 });

    // Premiums refill the pool; later refunds are paid again.
    const later = [outcome({ started: t0 + 10 }), outcome({ started: t0 + 11 }), outcome({ outcome: 'network_error', started: t0 + 12 })];
    shipped.push(...later);
    await ship(control, later);
    await cli('settler', 'run-once');
    t.same(
      (await rowsOf(t, control, shipped)).slice(-3).map((r) => [r.premium, r.refund, r.clamp]),
      [
        [100, 0, null],
        [100, 0, null],
        [0, 200, 'pool_depleted'],
      ],
    );
    const balances = (await cli('ledger', 'balances', '--json')).json().balances as { account: string; balance: number }[];
    t.ok(
      balances.filter((b) => b.account === 'pool' || b.account === 'treasury').every((b) => b.balance >= 0),
      'nothing negative',
    );
    t.equal((await cli('ledger', 'verify')).code, 0);
  });

  // One run settles these in one transaction, batch after batch (two calls each, a round of
  // endpoints a, b, c after another): each batch must see the pool and the hourly tallies as the
  // batches before it in the same transaction left them. On PostgreSQL a batch is read on the
  // settler's own connection, outside the transaction (control/store/pg/settlement-group.ts),
  // or, when that connection cannot read, in the transaction: both ways.
  for (const reader of kind === 'postgres' ? ['its own connection', 'a reader that fails'] : ['']) {
    t.test(
      `one run of many small batches: the pool and the hourly caps carry from batch to batch${reader ? `, read on ${reader}` : ''}`,
      async (t) => {
        const clock = manualClock(Date.UTC(2030, 0, 1, 12, 30));
        const control = await startTestControl(t, {
          store: kind,
          now: clock.now,
          flags: { 'settler.cadenceMs': 3_600_000, 'settler.batchCap': 2 },
        });
        const cli = (...args: string[]) => runCli(args, { control });
        t.equal((await addEndpoint(control, 'a', '2500')).code, 0);
        t.equal((await addEndpoint(control, 'b', '3000')).code, 0);
        t.equal((await addEndpoint(control, 'c', '100000')).code, 0);
        await cli('pool', 'fund', '10400');
        const h12 = Date.UTC(2030, 0, 1, 12, 0);
        const failures = (endpoint_id: string, n: number) =>
          Array.from({ length: n }, (_, i) => outcome({ endpoint_id, outcome: 'server_error', started: h12 + i * 60_000 }));
        // 1100 owed each. Round 1 pays a, b and c 2200 each; round 2 a 300 (its cap, 2500, reached),
        // b 800 (3000 reached), c 2200; round 3 a nothing, and c the 500 left in the pool.
        const a = failures('a', 5);
        const b = failures('b', 4);
        const c = failures('c', 6);
        await ship(control, [...a, ...b, ...c]);
        if (reader === 'a reader that fails') {
          // A pool already ended refuses every query, as a server with no connection left would.
          const ended = new Pool();
          await ended.end();
          (control.handle.ctx.store.settlement as unknown as { reader: PgConn }).reader = new PgConn(ended);
        }
        const run = (await cli('settler', 'run-once', '--json')).json<{ batches: unknown[]; calls: number; refunds: number }>();
        t.match(run, { calls: 15, refunds: 10400 });
        t.equal(run.batches.length, 8, 'two calls a batch');
        const store = control.handle.ctx.store;
        const got = (records: OutcomeRecord[]) =>
          Promise.all(
            records.map(async (r) => {
              const row = (await store.outcomes.byCallId(r.call_id)) as unknown as StoredCall;
              return [row.refund, row.clamp];
            }),
          );
        const clamped = (refund: number, clamp: string) => [refund, clamp];
        const paid = [1100, null];
        t.same(
          await got(a),
          [paid, paid, clamped(300, 'cap_clamped'), clamped(0, 'cap_clamped'), clamped(0, 'cap_clamped')],
          'a: its cap holds across its batches',
        );
        t.same(await got(b), [paid, paid, clamped(800, 'cap_clamped'), clamped(0, 'cap_clamped')], 'b: its cap holds across its batches');
        t.same(await got(c), [paid, paid, paid, paid, clamped(500, 'pool_depleted'), clamped(0, 'pool_depleted')], 'c: the pool runs dry');
        t.match((await cli('pool', 'show', '--json')).json(), { pool: 0, refunds: 10400 });
        t.equal((await cli('ledger', 'verify')).code, 0, 'the ledger verifies');
      },
    );
  }

  t.test('the hourly cap: per endpoint, per clock hour of the call start', async (t) => {
    const clock = manualClock(Date.UTC(2030, 0, 1, 12, 30));
    const control = await startTestControl(t, { store: kind, now: clock.now, flags: { 'settler.cadenceMs': 3_600_000 } });
    const cli = (...args: string[]) => runCli(args, { control });
    await addEndpoint(control, 'capped', '2500');
    await addEndpoint(control, 'free');
    await cli('pool', 'fund', '1.0');
    const h12 = Date.UTC(2030, 0, 1, 12, 0);
    // 12:00–12:59: four failures (4400 owed, cap 2500); 13:00: one more, a fresh hour.
    const capped = [0, 1, 2, 3].map((i) => outcome({ endpoint_id: 'capped', outcome: 'latency_breach', started: h12 + i * 60_000 }));
    await ship(control, capped);
    await cli('settler', 'run-once');
    // A later run in the same hour sees what was already paid.
    const shipped = [...capped];
    for (const one of [
      outcome({ endpoint_id: 'capped', outcome: 'server_error', started: h12 + 59 * 60_000 }),
      outcome({ endpoint_id: 'capped', outcome: 'server_error', started: h12 + HOUR }),
      outcome({ endpoint_id: 'free', outcome: 'server_error', started: h12 + 1 }),
    ]) {
      shipped.push(one);
      await ship(control, [one]);
    }
    clock.advance(HOUR);
    await cli('settler', 'run-once');

    const rows = (await rowsOf(t, control, shipped)).sort(
      (a, b) => a.endpoint_id.localeCompare(b.endpoint_id) || a.started_at - b.started_at,
    );
    t.same(
      rows.map((r) => [r.endpoint_id, r.refund, r.clamp]),
      [
        ['capped', 1100, null],
        ['capped', 1100, null],
        ['capped', 300, 'cap_clamped'],
        ['capped', 0, 'cap_clamped'],
        ['capped', 0, 'cap_clamped'],
        ['capped', 1100, null],
        ['free', 1100, null],
      ],
    );
    const pool = (await cli('pool', 'show', '--json')).json();
    t.match(pool, {
      refunds: 4700,
      refunds_owed: 7700,
      shortfall: 3000,
      clamped: { pool_depleted: 0, cap_clamped: 3 },
      pool: 1_000_000 - 4700,
    });
    t.equal((await cli('ledger', 'verify')).code, 0);

    // Raising the cap applies to calls settled from then on; the hour's tally stays.
    await cli('endpoints', 'update', 'capped', '--refund-cap-per-hour', '3000');
    const raised = outcome({ endpoint_id: 'capped', outcome: 'server_error', started: h12 + 30 * 60_000 });
    await ship(control, [raised]);
    await cli('settler', 'run-once');
    const last = (await rowsOf(t, control, [...shipped, raised])).at(-1)!;
    t.same(
      { refund: last.refund, refund_owed: last.refund_owed, clamp: last.clamp },
      { refund: 500, refund_owed: 1100, clamp: 'cap_clamped' },
      'what was left of the raised cap',
    );
    // The hour's tally is in no store read: asked of the database itself (SQLite's file).
    if (kind !== 'sqlite') return;
    t.equal(
      (control.handle.ctx.store as SqliteStore).db
        .prepare(`SELECT refunds FROM refund_hours WHERE endpoint_id = 'capped' AND hour = ?`)
        .pluck()
        .get(h12 / HOUR),
      3000,
      'the 12:00 hour paid exactly its new cap',
    );
  });
});
