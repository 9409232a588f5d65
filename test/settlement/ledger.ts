// The ledger and settlement batches at the store level, on each store: balances,
// one-transaction batches, idempotency, and the numbers the indexer reads. Payouts, the
// transfer rules and the invariant checks are `ledger-checks.ts`.
import t from 'tap';
import { planBatch } from '../../control/settler/plan';
import type { NextBatch } from '../../control/store/settlement';
import type { Outcome, OutcomeRecord } from '../../protocol/outcome';
import type { BatchView } from '../../protocol/settlement';
import { expectedSettlement, outcome, saveEndpoint } from '../fixtures/settlement';
import { T0, balance, batchPostings, byTransfer, fund, keyLedger, keySums, openWithSql, rowsOf, settleAll } from '../fixtures/ledger';
import { newInstall, openInstall } from '../fixtures/store-sql';
import { forEachStore, openTestStore, testDatabaseUrl } from '../fixtures/stores';

t.test('a batch settles every call once, in one transaction, and matches a hand count', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const econ = { price: 2000, premium: 150, treasury_fee_bps: 1000 };
    await saveEndpoint(store, 'ep', econ);
    await fund(store, 1_000_000);
    const kinds: Outcome[] = ['ok', 'ok', 'server_error', 'latency_breach', 'network_error', 'schema_mismatch', 'client_error', 'ok'];
    const records = kinds.flatMap((k, i) => [
      outcome({ outcome: k, key_id: i % 2 ? 'key_a' : 'key_b', started: T0 + i }),
      outcome({ outcome: k, key_id: null, started: T0 + i }),
    ]);
    await store.outcomes.ingest(records, T0);

    const batches = await settleAll(store);
    t.equal(batches.length, 1);
    const want = expectedSettlement(records, econ, 1_000_000);
    t.equal(await balance(store, keyLedger('key_a')), want.keys.get('key_a'));
    t.equal(await balance(store, keyLedger('key_b')), want.keys.get('key_b'));
    t.equal(await balance(store, 'pool'), want.pool);
    t.equal(await balance(store, 'treasury'), want.treasury);
    t.equal(await balance(store, 'external'), -1_000_000);
    t.match(batches[0], {
      endpoint_id: 'ep',
      calls: records.length,
      premiums: want.premiums,
      refunds: want.refunds,
      refunds_owed: want.refunds,
      clamped_calls: 0,
      treasury_fees: want.treasury,
    });

    for (const r of await rowsOf(store, records)) {
      t.equal(r.settled_batch, batches[0]!.id);
      if (r.key_id === null) t.match(r, { premium: 0, refund: 0, refund_owed: 0, clamp: null }, 'keyless: zeros');
      else if (r.outcome === 'ok') t.match(r, { premium: 150, refund: 0 });
      else if (r.outcome === 'client_error') t.match(r, { premium: 0, refund: 0, refund_owed: 0 });
      else t.match(r, { premium: 0, refund: 2150, refund_owed: 2150, clamp: null });
    }

    t.same(await settleAll(store), [], 'settling again finds nothing');
    t.equal(await store.outcomes.ingest(records, T0 + 5), 0, 'a replayed shipment adds nothing');
    t.same(await settleAll(store), [], 'and settles nothing');
    t.equal(await balance(store, 'pool'), want.pool, 'balances unchanged');
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
  });
});

t.test('a batch books one premium, one treasury fee and one refund transfer, a posting per key', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    const econ = { price: 1000, premium: 100, treasury_fee_bps: 1000 };
    await saveEndpoint(store, 'ep', econ);
    await fund(store, 1_000_000);
    // key_a pays 3 premiums and is refunded once, key_b only pays, key_c pays once and is
    // refunded twice, key_d is only refunded; the keyless calls move nothing.
    const calls: [string | null, Outcome][] = [
      ['key_a', 'ok'],
      ['key_b', 'ok'],
      ['key_c', 'server_error'],
      ['key_a', 'ok'],
      ['key_d', 'latency_breach'],
      ['key_a', 'network_error'],
      ['key_c', 'ok'],
      ['key_b', 'ok'],
      [null, 'server_error'],
      ['key_a', 'ok'],
      ['key_c', 'network_error'],
      ['key_b', 'client_error'],
      [null, 'ok'],
    ];
    const records = calls.map(([key_id, k], i) => outcome({ outcome: k, key_id, started: T0 + i }));
    await store.outcomes.ingest(records, T0);
    const [batch] = await settleAll(store);
    t.equal(batch!.treasury_fees, 60, '10 % of 600 in premiums');

    const transfers = byTransfer(await batchPostings(at, batch!.id));
    t.same(
      transfers.map((ps) => ps[0]!.kind),
      ['premium', 'treasury_fee', 'refund'],
      'three transfers, premiums before the fee before refunds',
    );
    const [premium, fee, refund] = transfers.map((ps) => Object.fromEntries(ps.map((p) => [p.account, p.amount])));
    t.same(
      premium,
      { 'account:acc_a': -300, 'account:acc_b': -200, 'account:acc_c': -100, pool: 600 },
      "premiums: each key's account, their sum to the pool",
    );
    t.same(fee, { pool: -60, treasury: 60 }, 'the fee');
    t.same(
      refund,
      { 'account:acc_a': 1100, 'account:acc_c': 2200, 'account:acc_d': 1100, pool: -4400 },
      "refunds: the sum from the pool, each key's account",
    );

    // The same from the settled calls: a key's posting is the sum of its calls, the pool's the batch's.
    const sums = await keySums(at, batch!.id);
    t.same(premium, { ...Object.fromEntries([...sums.premiums].map(([k, v]) => [k, -v])), pool: batch!.premiums });
    t.same(refund, { ...Object.fromEntries(sums.refunds), pool: -batch!.refunds });
    const want = expectedSettlement(records, econ, 1_000_000);
    t.equal(await balance(store, 'pool'), want.pool);
    for (const [key, value] of want.keys) t.equal(await balance(store, keyLedger(key)), value, `${key}'s account's balance`);
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
    t.equal(verified.counts.transfers, 4, "the funding and the batch's three");
  });
});

t.test('batches: one endpoint each, at most the cap, oldest received first, boundary respected', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'ep');
    await saveEndpoint(store, 'other');
    await fund(store, 10_000_000);
    const shipments = [
      Array.from({ length: 25 }, (_, i) => outcome({ started: T0 + i })),
      Array.from({ length: 5 }, (_, i) => outcome({ endpoint_id: 'other', started: T0 + i })),
      Array.from({ length: 7 }, (_, i) => outcome({ started: T0 + 100 + i })),
    ];
    for (const [i, records] of shipments.entries()) await store.outcomes.ingest(records, T0 + 10 * i);
    t.same(await store.settlement.pendingEndpoints(T0 + 15), ['ep', 'other'], 'oldest backlog first');
    t.same(await store.settlement.pendingEndpoints(T0 + 5), ['ep'], 'boundary');

    const first = (await store.settlement.settleBatch('ep', T0 + 15, 10, T0, planBatch))!;
    t.equal(first.calls, 10, 'capped');
    const firstCalls = (await rowsOf(store, shipments.flat())).filter((r) => r.settled_batch === first.id);
    t.equal(firstCalls.length, 10);
    t.ok(
      firstCalls.every((r) => r.received_at === T0),
      'the oldest ones',
    );
    const made = await settleAll(store, 10, T0 + 15);
    t.same(
      made.map((b) => [b.endpoint_id, b.calls]),
      [
        ['ep', 10],
        ['other', 5],
        ['ep', 5],
      ],
      'round by round, one endpoint per batch',
    );
    const waiting = await store.settlement.backlog();
    t.equal(waiting.count, 7, 'outcomes received after the boundary wait');
    t.equal(waiting.oldest_received_at, T0 + 20);
    t.same(
      (await settleAll(store, 10)).map((b) => b.calls),
      [7],
    );
    t.ok((await store.ledger.verify()).ok);
  });
});

t.test('a failing batch leaves nothing behind', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'ep');
    await fund(store, 1_000_000);
    await store.outcomes.ingest([outcome(), outcome({ outcome: 'server_error' })], T0);
    const before = await store.ledger.poolView();
    await t.rejects(
      store.settlement.settleBatch('ep', T0, 10, T0, (input) => {
        const p = planBatch(input);
        p.refunds.set('key_a', 5_000_000); // more than the pool holds: the CHECK fails mid-batch
        return p;
      }),
    );
    t.same(await store.ledger.poolView(), before, 'no batch, no transfer, no balance change');
    t.equal((await store.settlement.backlog()).count, 2, 'both calls still pending');
    t.equal((await settleAll(store)).length, 1, 'and settle normally afterwards');
    t.ok((await store.ledger.verify()).ok);
  });
});

t.test('batches settled at once, through two stores on one database, are numbered 1..n and chained', async (t) => {
  forEachStore(t, async (t, kind) => {
    // Two stores on one database, as two control processes would have them.
    const dataDir = t.testdir();
    const url = await testDatabaseUrl(t, kind);
    const opts = url === null ? { dataDir } : { dataDir, databaseUrl: url };
    const stores = [await openTestStore(t, kind, opts), await openTestStore(t, kind, opts)];
    const endpoints = ['e0', 'e1', 'e2', 'e3', 'e4', 'e5'];
    for (const id of endpoints) await saveEndpoint(stores[0]!, id, { treasury_fee_bps: 500 });
    await fund(stores[0]!, 10_000_000);
    const records = endpoints.flatMap((id) =>
      Array.from({ length: 20 }, (_, i) => outcome({ endpoint_id: id, key_id: `key_${i % 3}`, outcome: i % 4 ? 'ok' : 'server_error' })),
    );
    await stores[0]!.outcomes.ingest(records, T0);

    // Each endpoint twice at once (20 calls, cap 10), half of them through each store, and a group beside them.
    const group: NextBatch = {
      next: (previous) => (previous === null ? { endpointId: 'e0', cap: 10 } : null),
      startRound: () => undefined,
    };
    const settles = [
      ...endpoints.flatMap((id, i) => [
        () => stores[i % 2]!.settlement.settleBatch(id, T0, 10, T0, planBatch).then((b) => (b === null ? [] : [b])),
        () => stores[(i + 1) % 2]!.settlement.settleBatch(id, T0, 10, T0, planBatch).then((b) => (b === null ? [] : [b])),
      ]),
      () => stores[1]!.settlement.settleGroup(group, T0, T0, planBatch, 100),
    ];
    // SQLite's two stores share this process's one thread, and a settling transaction spans
    // awaits: a second BEGIN IMMEDIATE would wait for the first, blocking the thread the first
    // needs to commit. Two processes each wait their turn; here the stores take turns.
    const made: BatchView[] = [];
    if (kind === 'sqlite') for (const settle of settles) made.push(...(await settle()));
    else made.push(...(await Promise.all(settles.map((settle) => settle()))).flat());
    const settled = await stores[0]!.ledger.settledBatches();
    t.equal((await stores[1]!.settlement.backlog()).count, 0, 'every call settled');
    t.equal(
      made.reduce((n, b) => n + b.calls, 0),
      records.length,
      'each once',
    );
    t.same(
      made.map((b) => b.id).sort((a, b) => a - b),
      Array.from({ length: settled }, (_, i) => i + 1),
      'batch ids 1..n, each once',
    );
    t.ok(made.every((b) => b.calls <= 10));
    t.equal((await stores[0]!.receipts.head())?.batch, settled, 'every batch has its receipt');
    const verified = await stores[1]!.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
  });
});

t.test('a removed endpoint settles with its last economics', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'gone', { price: 500, premium: 50 });
    await store.endpoints.remove('gone', T0);
    await fund(store, 1_000_000);
    await store.outcomes.ingest([outcome({ endpoint_id: 'gone', outcome: 'server_error' })], T0);
    await settleAll(store);
    t.equal(await balance(store, keyLedger('key_a')), 550);
  });
});

t.test('the pool never went negative, checked over its history', async (t) => {
  forEachStore(t, async (t, kind) => {
    const { store, exec } = await openWithSql(t, kind);
    await saveEndpoint(store, 'ep');
    await fund(store, 2000);
    await store.outcomes.ingest([outcome({ outcome: 'server_error' })], T0);
    await settleAll(store);
    t.ok((await store.ledger.verify()).ok);
    // Rewrite history so the funding comes after the refund it paid for: every other invariant holds.
    await exec(
      `INSERT INTO ledger_transfers (id, at, kind, call_id, batch_id, reference, actor) SELECT 100, at, kind, call_id, batch_id, reference, actor FROM ledger_transfers WHERE id = 1`,
    );
    await exec(`UPDATE ledger_postings SET transfer_id = 100 WHERE transfer_id = 1`);
    await exec(`UPDATE lp_share_events SET transfer_id = 100, before_transfer = 100 WHERE transfer_id = 1`);
    await exec(`DELETE FROM ledger_transfers WHERE id = 1`);
    t.match((await store.ledger.verify()).violation, /running balance reached -1100/);
  });
});

t.test('calls admitted uncovered: stored apart, out of the exposure, settled moving nothing, counted', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
    await fund(store, 5_000);
    const uncovered = (o: OutcomeRecord): OutcomeRecord => ({ ...o, coverage: 'none' });
    const records = [
      outcome({ started: T0 + 1 }),
      outcome({ outcome: 'server_error', started: T0 + 2 }),
      uncovered(outcome({ started: T0 + 3 })),
      uncovered(outcome({ outcome: 'server_error', started: T0 + 4 })),
      uncovered(outcome({ outcome: 'latency_breach', started: T0 + 5 })),
    ];
    t.equal(await store.outcomes.ingest(records, T0 + 10), 5);
    t.equal((await store.ledger.totals()).uncovered_calls, 3, 'three uncovered calls counted');
    const capital = await store.lps.capital(1, T0 + 10);
    t.equal(capital.exposure, 1_100, 'the exposure counts the covered failure only');
    await settleAll(store);
    const totals = await store.ledger.totals();
    t.match(totals, { settled_calls: 5, uncovered_calls: 3, total_premiums: 100, total_refunds: 1_100, total_refunds_owed: 1_100 });
    const settled = await store.ledger.recentActivity(10);
    for (const r of records.slice(2)) {
      t.match(
        settled.find((a) => a.call_id === r.call_id),
        { premium: 0, refund: 0, refund_owed: 0, clamp: null },
        `${r.outcome}, uncovered: nothing moved`,
      );
    }
    t.equal(await store.ledger.poolSize(), 5_000 + 100 - 1_100, 'the pool took the covered premium and paid the covered refund');
    t.match(await store.ledger.verify(), { ok: true });
  });
});

t.test('numbers for the indexer', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
    await fund(store, 1200);
    const records = [
      outcome({ started: T0 + 1 }),
      outcome({ outcome: 'server_error', started: T0 + 2 }),
      outcome({ outcome: 'server_error', started: T0 + 3 }),
      outcome({ outcome: 'client_error', started: T0 + 4 }),
    ];
    await store.outcomes.ingest(records, T0);
    t.same(await store.ledger.totals(), {
      pool_size: 1200,
      settled_batches: 0,
      settled_calls: 0,
      unsettled_calls: 4,
      total_calls: 4,
      uncovered_calls: 0,
      total_premiums: 0,
      total_refunds: 0,
      total_refunds_owed: 0,
      total_treasury_fees: 0,
    });
    await settleAll(store);
    await store.outcomes.ingest([outcome({ started: T0 + 5 })], T0 + 1);
    // pool: 1200 + 100 − 1100 = 200, then the second refund is clamped to 200.
    t.same(await store.ledger.totals(), {
      pool_size: 0,
      settled_batches: 1,
      settled_calls: 4,
      unsettled_calls: 1,
      total_calls: 5,
      uncovered_calls: 0,
      total_premiums: 100,
      total_refunds: 1300,
      total_refunds_owed: 2200,
      total_treasury_fees: 0,
    });
    t.equal(await store.ledger.poolSize(), 0);
    t.equal(await store.ledger.settledBatches(), 1);
    t.equal(await store.ledger.totalRefunds(), 1300);
    t.equal(await store.ledger.totalPremiums(), 100);
    t.equal(await store.ledger.totalCalls(), 5);
    const activity = await store.ledger.recentActivity(3);
    t.equal(activity.length, 3);
    t.match(
      activity[0],
      { endpoint_id: 'ep', outcome: 'client_error', premium: 0, refund: 0, settled_batch: 1 },
      'settled calls only, newest first: the pending call is not listed',
    );
    t.match(activity[1], { outcome: 'server_error', refund: 200, refund_owed: 1100, clamp: 'pool_depleted' });
    t.match(activity[2], { outcome: 'server_error', refund: 1100, refund_owed: 1100, clamp: null });
    t.notOk(
      activity.some((a) => a.settled_batch === null),
      'no unsettled call in recent activity (docs/design.md §7)',
    );
    t.same(
      activity.map((a) => a.call_id),
      [records[3]!.call_id, records[2]!.call_id, records[1]!.call_id],
      'call ids as stored (the indexer maps them)',
    );
    t.equal(activity[0]!.started_at, T0 + 4);
    const view = await store.ledger.poolView();
    t.match(view, {
      pool: 0,
      funded: 1200,
      refunds: 1300,
      refunds_owed: 2200,
      shortfall: 900,
      clamped: { pool_depleted: 1, cap_clamped: 0 },
      backlog: 1,
    });
  });
});
