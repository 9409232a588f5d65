// The settler inside control: cadence, batch cap, pause kept across restarts, run-once (also
// while paused), status, and the audit trail of operator actions.
import t from 'tap';
import { join } from 'node:path';
import type { SqliteStore } from '../../control/store';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { outcome, pauseFlagReads, saveEndpoint } from '../fixtures/settlement';
import { waitFor } from '../fixtures/stack';
import { forEachStore, testDatabaseUrl } from '../fixtures/stores';

forEachStore(t, (t, kind) => {
  t.test('settles on its cadence and reports its state', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 20, 'settler.batchCap': 4 } });
    const store = control.handle.ctx.store;
    await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
    const fund = await runCli(['pool', 'fund', '1', '--json'], { control });
    t.equal(fund.code, 0, fund.stderr);
    await store.outcomes.ingest(
      Array.from({ length: 10 }, () => outcome()),
      Date.now(),
    );
    await waitFor(async () => (await store.settlement.backlog()).count === 0, 'the backlog to drain');
    const batches = (await store.publicReads.batches(100)).map((b) => b.calls).reverse();
    t.same(batches, [4, 4, 2], 'batches of at most settler.batchCap');
    const status = await runCli(['settler', 'status', '--json'], { control });
    t.equal(status.code, 0);
    t.match(status.json(), {
      state: /^(idle|running)$/,
      cadence_ms: 20,
      batch_cap: 4,
      backlog: 0,
      lag_ms: null,
      last_batch: { calls: 2, endpoint_id: 'ep', premiums: 200 },
      last_error: null,
    });
    t.type(status.json().last_run_at, 'string');
    const self = { id: control.handle.ctx.controlId, url: control.urls.control };
    t.same(status.json().leader, self, 'the one control settles, and says so');
    const overall = (await runCli(['status', '--json'], { control })).json();
    t.match(overall.controls, [{ ...self, leader: true, last_seen: String }], 'status lists the one control');
    t.equal(overall.controls.length, 1);
    const { last_run_at: _a, state: _s, ...viaCtx } = (await control.handle.ctx.settler())!;
    const { last_run_at: _b, state: _t, ...viaApi } = (await control.admin('GET', '/_admin/v1/settler')).body;
    t.same(viaCtx, viaApi, 'ctx.settler reports the same status');
    const human = await runCli(['settler', 'status'], { control });
    t.match(human.stdout, /state: +(idle|running)/);
    t.match(human.stdout, /last batch: +#3 ep: 2 calls/);
  });

  t.test('pause holds across a restart; run-once works while paused; resume settles again', async (t) => {
    const dataDir = join(t.testdir(), 'data');
    const flags = { 'settler.cadenceMs': 10, 'settler.batchCap': 1000 };
    const databaseUrl = await testDatabaseUrl(t, kind);
    const first = await startTestControl(t, { dataDir, flags: { ...flags, databaseUrl } });
    await saveEndpoint(first.handle.ctx.store, 'ep', { price: 0, premium: 50 });
    const paused = await runCli(['settler', 'pause', '--json'], { control: first });
    t.equal(paused.code, 0);
    t.equal(paused.json().state, 'paused');
    await first.handle.ctx.store.outcomes.ingest([outcome(), outcome()], Date.now());
    const firstReads = pauseFlagReads(first.handle.ctx.store);
    await waitFor(() => firstReads() >= 2, 'a whole scheduled run after the calls arrived');
    t.equal((await first.handle.ctx.store.settlement.backlog()).count, 2, 'nothing settled while paused');
    await first.close();

    const second = await startTestControl(t, { dataDir, flags: { ...flags, databaseUrl } });
    const store = second.handle.ctx.store;
    t.equal((await runCli(['settler', 'status', '--json'], { control: second })).json().state, 'paused', 'still paused after a restart');
    const secondReads = pauseFlagReads(store);
    await waitFor(() => secondReads() >= 2, 'a whole scheduled run after the restart');
    t.equal((await store.settlement.backlog()).count, 2, 'nothing settled after the restart either');
    t.match((await runCli(['settler', 'status', '--json'], { control: second })).json(), { backlog: 2, lag_ms: Number });

    const once = await runCli(['settler', 'run-once', '--json'], { control: second });
    t.equal(once.code, 0, once.stderr);
    t.match(once.json(), { calls: 2, premiums: 100, refunds: 0, backlog: 0, batches: [{ endpoint_id: 'ep', calls: 2, premiums: 100 }] });
    const again = await runCli(['settler', 'run-once'], { control: second });
    t.match(again.stdout, /Nothing to settle/);

    await store.outcomes.ingest([outcome()], Date.now());
    const resumed = await runCli(['settler', 'resume', '--json'], { control: second });
    t.not(resumed.json().state, 'paused');
    await waitFor(async () => (await store.settlement.backlog()).count === 0, 'the cadence to settle after resume');

    const audit = await store.audit.list(50);
    const actions = audit.map((e) => `${e.actor}:${e.action}`);
    t.ok(actions.includes('root:settler.pause'), 'pause audited');
    t.ok(actions.includes('root:settler.resume'), 'resume audited');
    t.ok(actions.includes('root:settler.run_once'), 'run-once audited');
    const run = audit.find((e) => e.action === 'settler.run_once' && (e.detail.calls as number) === 2);
    t.ok(run, 'with what it settled');
    // Who wrote a ledger entry is in no store read: asked of the database itself (SQLite's file).
    if (kind !== 'sqlite') return;
    const actors = (store as SqliteStore).db
      .prepare(`SELECT DISTINCT actor FROM ledger_transfers WHERE batch_id IS NOT NULL`)
      .pluck()
      .all();
    t.same(actors, ['settler'], 'batch entries are written by the settler');
  });

  t.test('run-once in human form lists the batches', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 3_600_000, 'settler.batchCap': 2 } });
    const store = control.handle.ctx.store;
    await saveEndpoint(store, 'a', { price: 1000, premium: 100 });
    await saveEndpoint(store, 'b', { price: 1000, premium: 100 });
    await runCli(['pool', 'fund', '5000'], { control });
    await store.outcomes.ingest(
      [
        outcome({ endpoint_id: 'a' }),
        outcome({ endpoint_id: 'a', outcome: 'server_error' }),
        outcome({ endpoint_id: 'a' }),
        outcome({ endpoint_id: 'b', outcome: 'server_error' }),
      ],
      Date.now(),
    );
    const once = await runCli(['settler', 'run-once'], { control });
    t.equal(once.code, 0, once.stderr);
    t.match(once.stdout, /BATCH +ENDPOINT +CALLS/);
    t.match(
      once.stdout,
      /Settled 4 calls in 3 batches: premiums 0\.0002 \(200 micro\), refunds 0\.0022 \(2200 micro\) of 0\.0022 \(2200 micro\) owed \(0 clamped\)\./,
    );
  });

  t.test('a large backlog is group-committed in equal shares per endpoint', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 3_600_000, 'settler.batchCap': 100_000 } });
    const store = control.handle.ctx.store;
    for (const id of ['a', 'b', 'c', 'd']) await saveEndpoint(store, id, { price: 0, premium: 10 });
    const t0 = Date.now() - 60_000;
    for (let i = 0; i < 24_000; i += 4_000) {
      await store.outcomes.ingest(
        Array.from({ length: 4_000 }, (_, j) => outcome({ endpoint_id: 'abcd'[(i + j) % 4]!, started: t0 + i + j })),
        t0 + i,
      );
    }
    const run = await runCli(['settler', 'run-once', '--json'], { control });
    t.equal(run.code, 0, run.stderr);
    const batches = run.json().batches as { endpoint_id: string; calls: number }[];
    // 20,000 calls per commit shared by 4 endpoints: 5,000 each, then the remaining 1,000 each.
    t.same(
      batches.map((b) => b.calls),
      [5000, 5000, 5000, 5000, 1000, 1000, 1000, 1000],
    );
    t.same(
      batches
        .slice(0, 4)
        .map((b) => b.endpoint_id)
        .sort(),
      ['a', 'b', 'c', 'd'],
      'one batch per endpoint per round',
    );
    t.equal(run.json().premiums, 240_000);
    t.equal((await runCli(['ledger', 'verify'], { control })).code, 0);
  });
});
