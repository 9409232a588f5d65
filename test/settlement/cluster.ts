/**
 * Several controls on one PostgreSQL database: exactly one settler settles on the cadence (the
 * holder of the settler's lease), another takes the lease over when the holder stops or dies,
 * settlers racing on one database still settle every call once, and pause, resume, run-once
 * and the status answers work through any control.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../runtime/log';
import type { Store } from '../../control/store';
import { LeaseLeadership } from '../../control/settler/leadership';
import { planBatch } from '../../control/settler/plan';
import { Settler } from '../../control/settler/settler';
import { verifyStore } from '../../cli/commands/store/verify';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { outcome, pauseFlagReads, saveEndpoint } from '../fixtures/settlement';
import { waitFor } from '../fixtures/stack';
import { openTestStore } from '../fixtures/stores';

const T0 = Date.UTC(2030, 0, 1, 12);

/** Two stores on one new database, each with its own data dir (so its own receipt signing key). */
async function twoStores(t: Test): Promise<[Store, Store]> {
  const root = t.testdir();
  const url = await createDatabase(t);
  for (const dir of ['a', 'b']) mkdirSync(join(root, dir));
  const a = await openTestStore(t, 'postgres', { databaseUrl: url, dataDir: join(root, 'a') });
  const b = await openTestStore(t, 'postgres', { databaseUrl: url, dataDir: join(root, 'b') });
  return [a, b];
}

/** A funded pool, two endpoints and `count` outcomes of every kind, keyed and not. */
async function backlog(store: Store, count: number): Promise<void> {
  await saveEndpoint(store, 'ep1', { price: 1000, premium: 100, treasury_fee_bps: 500 }, T0);
  await saveEndpoint(store, 'ep2', { price: 500, premium: 30 }, T0);
  await store.mutate({ actor: 'test', now: T0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000_000, T0, 'test', 'seed'));
  const kinds = ['ok', 'server_error', 'client_error', 'network_error'] as const;
  const records = Array.from({ length: count }, (_, i) =>
    outcome({
      endpoint_id: i % 3 ? 'ep1' : 'ep2',
      outcome: kinds[i % kinds.length]!,
      key_id: i % 11 ? `key_${i % 5}` : null,
      started: T0 + i,
    }),
  );
  await store.outcomes.ingest(records, T0 + count);
}

if (!skipWithoutPostgres(t)) {
  t.test('settlers racing on one database settle every call once, in gapless batches', async (t) => {
    const [a, b] = await twoStores(t);
    const calls = 1500;
    await backlog(a, calls);
    const at = T0 + 60_000;
    // Many small batches from four loops on two stores at once: each transaction takes the
    // writer lock, then reads the calls still unsettled.
    const loop = async (store: Store, endpointId: string) => {
      const made: { id: number; calls: number }[] = [];
      for (;;) {
        const batch = await store.settlement.settleBatch(endpointId, at, 7, at, planBatch);
        if (batch === null) return made;
        made.push({ id: batch.id, calls: batch.calls });
      }
    };
    const settlerOf = (store: Store) => Settler.open({ store, log: silentLogger, now: () => at, cadenceMs: 3_600_000, batchCap: 5 });
    const [sa, sb] = await Promise.all([settlerOf(a), settlerOf(b)]);
    const runs = await Promise.all([loop(a, 'ep1'), loop(b, 'ep1'), loop(a, 'ep2'), loop(b, 'ep2'), sa.runOnce(), sb.runOnce()]);
    const batches = runs.flatMap((run) => ('batches' in run ? run.batches : run));
    t.ok(runs.slice(0, 4).filter((run) => (run as unknown[]).length > 0).length >= 2, 'the loops interleaved');
    t.equal(
      batches.reduce((n, x) => n + x.calls, 0),
      calls,
      'the batches made add up to every call, once',
    );
    const ids = batches.map((x) => x.id).sort((x, y) => x - y);
    t.same(
      ids,
      Array.from({ length: ids.length }, (_, i) => i + 1),
      'batches numbered 1, 2, 3 … without a gap or a repeat',
    );
    t.equal((await a.settlement.backlog()).count, 0, 'nothing left to settle');
    const totals = await a.ledger.totals();
    t.equal(totals.settled_batches, ids.length);
    const verified = await verifyStore(b);
    t.equal(verified.ledger.ok, true, 'the ledger holds');
    t.equal(verified.receipts.ok, true, `the receipt chain holds (${verified.receipts.reason ?? 'ok'})`);
    t.equal(verified.receipts.receipts, ids.length, 'one receipt per batch');
    t.equal(verified.receipts.keys, 2, "signed with both controls' keys");
  });

  t.test('one lease holder; it gives the lease up when it stops, and loses it when it dies', async (t) => {
    const [a, b] = await twoStores(t);
    const leaseMs = 1_000;
    const lease = (store: Store, id: string) =>
      new LeaseLeadership({ cluster: store.cluster!, id, leaseMs, cadenceMs: 50, log: silentLogger });
    await a.cluster!.heartbeat('ctl_a', 'http://a.example', T0, 3_600_000);
    await b.cluster!.heartbeat('ctl_b', 'http://b.example', T0, 3_600_000);
    const first = lease(a, 'ctl_a');
    const second = lease(b, 'ctl_b');
    await first.start();
    await second.start();
    t.teardown(() => Promise.all([first.stop(), second.stop()]));
    t.equal(first.leading(), true, 'the first to claim leads');
    t.equal(second.leading(), false, 'the other does not');
    t.same(await second.leader(), { id: 'ctl_a', url: 'http://a.example' }, 'both name the leader and its URL');
    t.same(
      (await b.cluster!.list()).map((c) => [c.id, c.leader]),
      [
        ['ctl_a', true],
        ['ctl_b', false],
      ],
    );

    await first.stop();
    t.equal(first.leading(), false, 'a stopped control does not lead');
    await waitFor(() => second.leading(), 'the other control to take the lease a stopped one gave up');
    t.same(await first.leader(), { id: 'ctl_b', url: 'http://b.example' });
    await second.stop();

    // A control that died holds an unexpired lease it never renews, nor gives up.
    t.equal(await a.cluster!.claimLease('ctl_dead', leaseMs), true);
    const third = lease(b, 'ctl_c');
    await third.start();
    t.teardown(() => third.stop());
    t.equal(third.leading(), false, 'not while the dead control’s lease runs');
    t.same(await third.leader(), { id: 'ctl_dead', url: '' }, 'an unregistered holder is named without a URL');
    await waitFor(() => third.leading(), 'another control to take the lease once it lapsed');
    t.equal((await a.cluster!.leaseHolder())?.id, 'ctl_c');
  });

  t.test('the control that takes the lease over settles at once, not a cadence later', async (t) => {
    const [a, b] = await twoStores(t);
    await backlog(a, 40);
    // A cadence of an hour: only a run on taking the lease can settle within this test.
    const settlerOf = (store: Store, id: string) =>
      Settler.open({
        store,
        log: silentLogger,
        now: () => T0 + 60_000,
        cadenceMs: 3_600_000,
        batchCap: 1_000,
        leadership: new LeaseLeadership({ cluster: store.cluster!, id, leaseMs: 900, cadenceMs: 3_600_000, log: silentLogger }),
      });
    const first = await settlerOf(a, 'ctl_a');
    await first.start();
    const second = await settlerOf(b, 'ctl_b');
    await second.start();
    t.teardown(() => Promise.all([first.stop(), second.stop()]));
    t.equal((await a.cluster!.leaseHolder())?.id, 'ctl_a', 'the first control leads');
    t.equal((await second.status()).backlog, 40, 'nothing settled yet: the first run of the cadence is an hour away');

    await first.stop(); // gives the lease up; the other takes it at its next claim (a third of the lease)
    await waitFor(async () => (await second.status()).backlog === 0, 'the new leader to settle the backlog');
    t.equal((await a.cluster!.leaseHolder())?.id, 'ctl_b', 'the second control holds the lease');
    t.match((await second.status()).last_batch, { id: Number }, 'and settled right away');
  });

  t.test('two controls: one settles; status, pause, resume and run-once through either; the other takes over', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const flags = { databaseUrl, 'settler.cadenceMs': 20, 'settler.leaseS': 1 };
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags });
    const second = await startTestControl(t, { dataDir: join(root, 'b'), flags });
    const firstId = first.handle.ctx.controlId;
    const secondId = second.handle.ctx.controlId;
    t.not(firstId, secondId);
    const store = second.handle.ctx.store;
    // The second control accepts the tokens the first made (it has none of its own).
    const viaSecond = (args: string[]) => runCli(args, { control: second.urls.control, token: first.adminToken });
    await saveEndpoint(store, 'ep', { price: 0, premium: 50 });

    const settler = await viaSecond(['settler', 'status', '--json']);
    t.equal(settler.code, 0, settler.stderr);
    t.same(settler.json().leader, { id: firstId, url: first.urls.control }, 'the first control leads, named with its admin URL');
    const human = await viaSecond(['settler', 'status']);
    t.match(human.stdout, new RegExp(`leader: +${firstId} at ${first.urls.control}`));
    const status = await runCli(['status', '--json'], { control: first });
    t.match(
      status.json().controls,
      [
        { id: firstId, url: first.urls.control, leader: true, last_seen: String },
        { id: secondId, url: second.urls.control, leader: false, last_seen: String },
      ],
      'status lists both controls, the leader marked',
    );
    t.equal(status.json().controls.length, 2);
    const table = await viaSecond(['status']);
    t.match(table.stdout, new RegExp(`${firstId} +${first.urls.control} +yes`));
    t.match(table.stdout, new RegExp(`${secondId} +${second.urls.control} +no`));

    // Paused through the control that does not settle: the one that does stops settling.
    const paused = await viaSecond(['settler', 'pause', '--json']);
    t.equal(paused.json().state, 'paused');
    // The leader reads the pause before each run and between group commits: a run it began before
    // the pause committed answers `running` until it ends, then the leader answers `paused`.
    const seen: string[] = [];
    await waitFor(async () => {
      const state = (await first.admin('GET', '/_admin/v1/settler')).body.state as string;
      seen.push(state);
      return state === 'paused';
    }, 'the leader to answer paused too');
    t.same(
      seen.filter((state) => state !== 'running' && state !== 'paused'),
      [],
      `before paused, the leader answered only running (its run in flight): ${seen.join(', ')}`,
    );
    await store.outcomes.ingest([outcome(), outcome(), outcome()], Date.now());
    const leaderReads = pauseFlagReads(first.handle.ctx.store);
    await waitFor(() => leaderReads() >= 2, 'a whole scheduled run of the leader after the calls arrived');
    t.equal((await store.settlement.backlog()).count, 3, 'nothing settled while paused');
    const once = await viaSecond(['settler', 'run-once', '--json']);
    t.equal(once.code, 0, once.stderr);
    t.equal(once.json().calls, 3, 'run-once through the other control settles, also while paused');
    await store.outcomes.ingest([outcome(), outcome()], Date.now());
    const resumed = await viaSecond(['settler', 'resume', '--json']);
    t.equal(resumed.code, 0);
    await waitFor(async () => (await store.settlement.backlog()).count === 0, 'the leader to settle again after resume');

    // The leader stops: the other takes over and settles.
    await first.close();
    await waitFor(
      async () => (await second.admin('GET', '/_admin/v1/settler', undefined, first.adminToken)).body.leader?.id === secondId,
      'the other control to take the lease',
    );
    await store.outcomes.ingest([outcome()], Date.now());
    await waitFor(async () => (await store.settlement.backlog()).count === 0, 'the new leader to settle');
    const left = await second.admin('GET', '/_admin/v1/status', undefined, first.adminToken);
    t.match(left.body.controls, [{ id: secondId, leader: true }], 'a stopped control leaves the list');
    t.equal(left.body.controls.length, 1);
    const audit = await store.audit.list(20);
    t.ok(
      audit.some((e) => e.action === 'settler.run_once'),
      'run-once audited',
    );
  });
}
