/**
 * `verifyStore` (cli/commands/store/verify.ts), the check `svcctl store copy` runs on the database it
 * wrote, through the `Store` interface alone: on a good store both verifiers pass; a store
 * tampered with fails the one that must catch it, naming the problem. Here on SQLite stores;
 * `verifyTarget` runs it on any store its opener gives.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { SqliteStore, type Store } from '../../control/store';
import { pgOpener, verifyStore, verifyTarget } from '../../cli/commands/store/verify';
import { StoreVerifyView } from '../../protocol/store-copy';
import { populateStore } from '../fixtures/populated-store';
import { makeReceipts } from '../../control/receipts/maker';

const populated = async (t: Test): Promise<SqliteStore> => {
  const store = await SqliteStore.open(join(t.testdir(), 'control.db'), { receiptsCore: makeReceipts });
  t.teardown(() => store.close());
  await populateStore(store, { outcomes: 200, batchCap: 40 });
  return store;
};

t.test('a good store passes both', async (t) => {
  const store = await populated(t);
  const view = await verifyStore(store);
  t.ok(StoreVerifyView.safeParse(view).success, 'the answer is the --json shape');
  t.equal(view.ok, true);
  t.same(view.ledger, await store.ledger.verify(), "the ledger's own verify, as `ledger verify` gets it");
  const totals = await store.ledger.totals();
  t.ok(totals.settled_batches > 3, 'several batches');
  t.match(view.receipts, { ok: true, receipts: totals.settled_batches, keys: 1, first_bad_batch: null, reason: null, key_problems: [] });
  t.same([view.receipts.refunds, view.receipts.premiums], [totals.total_refunds, totals.total_premiums], 'sums of the receipts');
});

t.test('a settled call rewritten: the ledger check fails', async (t) => {
  const store = await populated(t);
  store.db
    .prepare(`UPDATE settled_calls SET refund = refund + 1 WHERE call_id = (SELECT min(call_id) FROM settled_calls WHERE refund > 0)`)
    .run();
  const view = await verifyStore(store);
  t.equal(view.ok, false);
  t.equal(view.ledger.ok, false);
  t.match(view.ledger.violation, /^call .*: a refund above what was owed|^batch \d+ does not match/);
  t.equal(view.receipts.ok, true, 'the receipts themselves are intact');
});

t.test('a receipt deleted: both fail, naming the batch', async (t) => {
  const store = await populated(t);
  store.db.prepare(`DELETE FROM receipts WHERE batch = 3`).run();
  const view = await verifyStore(store);
  t.equal(view.ok, false);
  t.equal(view.ledger.violation, 'batch 3 has no receipt');
  t.match(view.receipts, { ok: false, receipts: 2, first_bad_batch: 3, reason: /^batch 3: no receipt/ });
});

t.test("a batch's refunds rewritten with its receipt left alone: the totals differ", async (t) => {
  const store = await populated(t);
  store.db.prepare(`UPDATE settlement_batches SET refunds = refunds + 5, refunds_owed = refunds_owed + 5 WHERE id = 2`).run();
  const view = await verifyStore(store);
  t.equal(view.ok, false);
  t.equal(view.ledger.ok, false);
  const batches = (await store.ledger.totals()).settled_batches;
  t.match(view.receipts, { ok: false, receipts: batches, first_bad_batch: null, reason: /refunds sum to \d+, .* is \d+/ });
});

t.test('verifyTarget opens the store its opener gives, verifies it and closes it', async (t) => {
  const dir = t.testdir();
  const first = await SqliteStore.open(join(dir, 'control.db'), { receiptsCore: makeReceipts });
  await populateStore(first, { outcomes: 50 });
  await first.close();
  const opened: string[] = [];
  let store: SqliteStore | null = null;
  const view = await verifyTarget('postgres://u@h/db', dir, async (url, dataDir): Promise<Store> => {
    opened.push(url, dataDir);
    store = await SqliteStore.open(join(dataDir, 'control.db'), { receiptsCore: makeReceipts });
    return store;
  });
  t.same(opened, ['postgres://u@h/db', dir]);
  t.equal(view.ok, true);
  t.equal(store!.db.open, false, 'closed afterwards');
  await t.rejects(
    verifyTarget('postgres://u@127.0.0.1:1/db', dir, pgOpener(makeReceipts)),
    /ECONNREFUSED/,
    'the PostgreSQL opener connects to PostgreSQL',
  );
});
