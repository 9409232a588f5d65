// Accounts hold the money, at the store level on each store: the keys of one account pay their
// premiums from and get their refunds into the one `account:<id>` (one posting per account in a
// batch's transfer), payouts are per account and wallet, and mark-paid takes from a wallet's
// accounts oldest first. `ledger verify` holds throughout, and catches a key without an account.
import t from 'tap';
import type { Store } from '../../control/store';
import { EVM_B, SOL_A, T0, balance, batchPostings, byTransfer, fund, insertKey, openWithSql, settleAll } from '../fixtures/ledger';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { newInstall, openInstall } from '../fixtures/store-sql';
import { forEachStore } from '../fixtures/stores';

const addAccount = (store: Store, id: string, at: number) =>
  store.mutate({ actor: 't', now: at }, { action: 'accounts.add' }, (tx) =>
    tx.accounts.insert({ id, name: id.replace('acc_', 'team-'), low: null, created_at: at, created_by: 't' }),
  );

t.test("two keys of one account: a premium of one and a refund of the other land on the account's one balance", async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
    await fund(store, 100_000);
    await addAccount(store, 'acc_team', T0);
    await insertKey(store, 'key_one', T0, { account: 'acc_team' });
    await insertKey(store, 'key_two', T0 + 1, { account: 'acc_team' });
    await insertKey(store, 'key_solo', T0 + 2);
    await store.outcomes.ingest(
      [
        outcome({ key_id: 'key_one', started: T0 }),
        outcome({ key_id: 'key_one', started: T0 + 1 }),
        outcome({ key_id: 'key_two', outcome: 'server_error', started: T0 + 2 }),
        outcome({ key_id: 'key_solo', started: T0 + 3 }),
        outcome({ key_id: 'key_two', started: T0 + 4 }),
      ],
      T0,
    );
    const [batch] = await settleAll(store);
    const transfers = byTransfer(await batchPostings(at, batch!.id)).map((ps) => [
      ps[0]!.kind,
      Object.fromEntries(ps.map((p) => [p.account, p.amount])),
    ]);
    t.same(
      transfers,
      [
        ['premium', { 'account:acc_team': -300, 'account:acc_solo': -100, pool: 400 }],
        ['refund', { 'account:acc_team': 1100, pool: -1100 }],
      ],
      "one posting per account: the two keys' premiums summed, the refund on the same account",
    );
    t.equal(await balance(store, 'account:acc_team'), 800, '−100 −100 (one) +1100 (two) −100 (two)');
    t.equal(await balance(store, 'account:acc_solo'), -100);
    t.equal(await balance(store, 'key:key_one'), 0, 'nothing posts to a key');
    t.match(await store.accounts.summary('acc_team'), { keys: 2, balance: 800 }, 'accounts show reads the balance');
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');

    // A batch whose key has no row yet read (the store's map) and one it has: the same statements.
    await store.outcomes.ingest([outcome({ key_id: 'key_two', outcome: 'network_error', started: T0 + 10 })], T0 + 1);
    await settleAll(store);
    t.equal(await balance(store, 'account:acc_team'), 1900);
    t.ok((await store.ledger.verify()).ok);
  });
});

t.test('payouts per account and wallet; mark-paid takes from the oldest account first', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = (await openWithSql(t, kind)).store;
    await saveEndpoint(store, 'ep', { price: 1000, premium: 0 });
    await fund(store, 1_000_000);
    await addAccount(store, 'acc_old', T0);
    await addAccount(store, 'acc_new', T0 + 5);
    await insertKey(store, 'key_a', T0 + 1, { account: 'acc_old' });
    await insertKey(store, 'key_b', T0 + 2, { account: 'acc_old' });
    await insertKey(store, 'key_c', T0 + 6, { account: 'acc_new' });
    await insertKey(store, 'key_d', T0 + 7);
    await store.outcomes.ingest(
      ['key_a', 'key_b', 'key_c', 'key_c', 'key_d'].map((key_id, i) => outcome({ key_id, outcome: 'server_error', started: T0 + i })),
      T0,
    );
    await settleAll(store);
    await store.keys.setWallet('key_a', SOL_A); // the wallet of key_a's account
    await store.mutate({ actor: 't', now: T0 }, { action: 'accounts.wallet.attach' }, (tx) => tx.accounts.setWallet('acc_new', SOL_A));
    await store.keys.setWallet('key_d', EVM_B);
    t.equal((await store.keys.byId('key_b'))?.wallet, SOL_A, "a key shows its account's wallet");
    t.same(
      (await store.ledger.payouts()).map((l) => [l.wallet, l.owed, l.keys.map((k) => [k.id, k.name, k.balance])]),
      [
        [EVM_B, 1000, [['acc_d', 'key_d', 1000]]],
        [
          SOL_A,
          4000,
          [
            ['acc_old', 'team-old', 2000],
            ['acc_new', 'team-new', 2000],
          ],
        ],
      ],
      "one line per wallet, its accounts oldest first, each with the account's whole balance",
    );
    const paid = await store.mutate({ actor: 't', now: T0 }, { action: 'payouts.mark_paid' }, (tx) =>
      tx.ledger.markPaid(SOL_A, 2500, 'tx-1', T0, 't'),
    );
    t.same(
      paid.result.paid,
      [
        { account_id: 'acc_old', amount: 2000 },
        { account_id: 'acc_new', amount: 500 },
      ],
      'oldest account first',
    );
    t.equal(paid.result.owed, 1500);
    t.equal(await balance(store, 'account:acc_old'), 0);
    t.equal(await balance(store, 'account:acc_new'), 1500);
    t.equal((await store.ledger.poolView()).owed_to_keys, 2500, 'what payouts would pay now, over the accounts');
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
  });
});

t.test('ledger verify catches a key without an account, and a move posted to the pool', async (t) => {
  forEachStore(t, async (t, kind) => {
    for (const [label, sql, pattern] of [
      [
        'a key whose account is gone',
        `UPDATE keys SET account_id = 'acc_gone' WHERE id = 'key_one'`,
        /key key_one belongs to account acc_gone, which does not exist/,
      ],
      [
        'a move that posts to the pool',
        `INSERT INTO ledger_transfers (id, at, kind, actor) VALUES (900, 0, 'move', 'migration');
         INSERT INTO ledger_postings (transfer_id, account, amount) VALUES (900, 'pool', -5), (900, 'account:acc_team', 5);
         UPDATE account_balances SET balance = balance - 5 WHERE account = 'pool';
         INSERT INTO account_balances (account, balance) VALUES ('account:acc_team', 5)`,
        /transfer 900 \(move\) posts -5 to pool/,
      ],
    ] as const) {
      await t.test(label, async (t) => {
        const { store, exec } = await openWithSql(t, kind);
        await fund(store, 100);
        await addAccount(store, 'acc_team', T0);
        await insertKey(store, 'key_one', T0, { account: 'acc_team' });
        t.ok((await store.ledger.verify()).ok, 'fine before');
        await exec(`${kind === 'sqlite' ? 'PRAGMA foreign_keys = OFF; ' : 'SET session_replication_role = replica; '}${sql}`);
        const result = await store.ledger.verify();
        t.notOk(result.ok, `${label}: caught`);
        t.match(result.violation, pattern, `${label}: ${result.violation}`);
      });
    }
  });
});
