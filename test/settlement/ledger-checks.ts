// The ledger's rules at the store level, on each store: payouts (per wallet, keys without one, a
// wallet attached later), one transfer of each kind per call, balanced transfers, the
// invariant checks of `ledger verify`, each one shown to catch its corruption, and batches
// booked one transfer per key (as before one per kind) verifying beside the new ones.
import t from 'tap';
import { LedgerError } from '../../control/store/ledger';
import type { Outcome } from '../../protocol/outcome';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import {
  EVM_B,
  SOL_A,
  T0,
  balance,
  batchPostings,
  byTransfer,
  fund,
  insertKey,
  openWithSql,
  settleAll,
  splitPerKey,
} from '../fixtures/ledger';
import { newInstall, openInstall } from '../fixtures/store-sql';
import { forEachStore, openTestStore } from '../fixtures/stores';

t.test('payouts: per wallet, keys without a wallet, a wallet attached later gets what accrued', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'ep', { price: 1000, premium: 0 });
    await fund(store, 1_000_000);
    await insertKey(store, 'key_a', T0, { wallet: SOL_A });
    await insertKey(store, 'key_b', T0 + 1, { wallet: EVM_B });
    await insertKey(store, 'key_c', T0 + 2);
    await insertKey(store, 'key_d', T0 + 3, { wallet: EVM_B.toLowerCase() });
    await store.outcomes.ingest(
      [
        ...Array.from({ length: 3 }, () => outcome({ key_id: 'key_a', outcome: 'server_error' })),
        outcome({ key_id: 'key_b', outcome: 'server_error' }),
        outcome({ key_id: 'key_c', outcome: 'network_error' }),
        outcome({ key_id: 'key_c', outcome: 'network_error' }),
        outcome({ key_id: 'key_d', outcome: 'latency_breach' }),
      ],
      T0,
    );
    await settleAll(store);
    const lines = await store.ledger.payouts();
    t.same(
      lines.map((l) => [l.wallet, l.owed, l.keys.map((k) => k.id)]),
      [
        [EVM_B, 2000, ['acc_b', 'acc_d']],
        [SOL_A, 3000, ['acc_a']],
        [null, 2000, ['acc_c']],
      ],
      "per account (each key's own here): EVM addresses group case-insensitively; accounts without a wallet on their own line",
    );

    await store.keys.setWallet('key_c', SOL_A);
    t.same(
      (await store.ledger.payouts(SOL_A)).map((l) => [l.owed, l.keys.map((k) => k.id)]),
      [[5000, ['acc_a', 'acc_c']]],
      'attached later (through a key, to its account): what accrued before is owed to the wallet',
    );

    const paid = async (wallet: string, amount: number, ref: string) =>
      (
        await store.mutate({ actor: 'test', now: T0 }, { action: 'payouts.mark_paid' }, (tx) =>
          tx.ledger.markPaid(wallet, amount, ref, T0, 'test'),
        )
      ).result;
    const r = await paid(SOL_A, 3500, 'tx-1');
    t.same(
      r.paid,
      [
        { account_id: 'acc_a', amount: 3000 },
        { account_id: 'acc_c', amount: 500 },
      ],
      'oldest account first',
    );
    t.equal(r.owed, 1500);
    t.equal(await balance(store, 'account:acc_a'), 0);
    t.equal(await balance(store, 'account:acc_c'), 1500);
    await t.rejects(paid(SOL_A, 1501, 'tx-2'), LedgerError, 'never more than owed');
    await t.rejects(paid(SOL_A, 1, 'tx-1'), /already recorded/, 'a reference is used once');
    await t.rejects(paid('0x0000000000000000000000000000000000000000', 1, 'tx-3'), /nothing is owed/);
    await paid(EVM_B.toLowerCase(), 2000, 'tx-4');
    t.same(
      (await store.ledger.payouts()).map((l) => [l.wallet, l.owed]),
      [[SOL_A, 1500]],
    );
    const view = await store.ledger.poolView();
    t.equal(view.paid_out, 5500);
    t.equal(view.owed_to_keys, 1500);
    t.equal(await balance(store, 'external'), -1_000_000 + 5500);
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
  });
});

t.test('a call can have only one transfer of each kind', async (t) => {
  forEachStore(t, async (t, kind) => {
    const { exec } = await openWithSql(t, kind);
    const insert = () =>
      exec(`INSERT INTO ledger_transfers (at, kind, call_id, actor) VALUES (${T0}, 'refund', '018f0000-0000-7000-8000-000000000001', 't')`);
    await insert();
    await t.rejects(insert, /UNIQUE|ledger_one_kind_per_call/, 'ledger_one_kind_per_call');
  });
});

t.test('transfers must balance', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const bad = (postings: { account: string; amount: number }[]) =>
      t.rejects(
        store.mutate({ actor: 't', now: T0 }, { action: 'test.transfer' }, (tx) =>
          tx.ledger.transfer({ kind: 'fund', at: T0, actor: 't', postings }),
        ),
        LedgerError,
      );
    await bad([
      { account: 'external', amount: -5 },
      { account: 'pool', amount: 4 },
    ]);
    await bad([
      { account: 'pool', amount: 0 },
      { account: 'external', amount: 0 },
    ]);
    await bad([
      { account: 'pool', amount: 5 },
      { account: 'pool', amount: -5 },
    ]);
    await bad([
      { account: 'pool', amount: 1.5 },
      { account: 'external', amount: -1.5 },
    ]);
    t.equal((await store.ledger.balances()).length, 3);
  });
});

t.test('ledger verify catches each kind of corruption', async (t) => {
  forEachStore(t, async (t, kind) => {
    const corruptions: [string, string, RegExp][] = [
      ['a balance edited', `UPDATE account_balances SET balance = balance + 1 WHERE account = 'treasury'`, /sum to 1, not 0/],
      [
        'a balance moved between accounts',
        `UPDATE account_balances SET balance = balance + (CASE account WHEN 'treasury' THEN 7 ELSE -7 END) WHERE account IN ('treasury', 'external')`,
        /account (external|treasury): balance/,
      ],
      [
        'a posting edited',
        `UPDATE ledger_postings SET amount = amount + 1 WHERE account = 'pool' AND transfer_id = 1`,
        /transfer 1: postings sum to 1/,
      ],
      ['a posting deleted', `DELETE FROM ledger_postings WHERE account = 'treasury'`, /has 1 posting|sum to/],
      [
        // The batch's one premium transfer and both balances still add up; its keys' shares do not.
        "a premium moved from one key's posting to another's",
        `UPDATE ledger_postings SET amount = amount + (CASE account WHEN 'account:acc_a' THEN 1 ELSE -1 END)
           WHERE account IN ('account:acc_a', 'account:acc_b') AND transfer_id = (SELECT id FROM ledger_transfers WHERE kind = 'premium');
         UPDATE account_balances SET balance = balance + (CASE account WHEN 'account:acc_a' THEN 1 ELSE -1 END)
           WHERE account IN ('account:acc_a', 'account:acc_b')`,
        /batch 1: ledger entries for account:acc_[ab] do not match its calls/,
      ],
      [
        'an outcome un-settled',
        `DELETE FROM settled_calls WHERE call_id = (SELECT call_id FROM settled_calls ORDER BY call_id LIMIT 1)`,
        /call \S+ is neither settled nor waiting to be/,
      ],
      [
        'a settled call queued again',
        `INSERT INTO unsettled_outcomes (endpoint_id, received_at, call_id, key_id, outcome, started_at)
         SELECT endpoint_id, received_at, call_id, key_id, outcome, started_at FROM settled_calls WHERE call_id = (SELECT call_id FROM settled_calls ORDER BY call_id LIMIT 1)`,
        /call \S+ is settled and still waiting to be/,
      ],
      [
        'an outcome record rewritten after it settled',
        `UPDATE outcome_records SET outcome = 'client_error' WHERE call_id = (SELECT call_id FROM outcome_records WHERE outcome = 'server_error' ORDER BY call_id LIMIT 1)`,
        /call \S+ is settled as a call its outcome record does not describe/,
      ],
      [
        "a settled call's outcome record deleted",
        `DELETE FROM outcome_records WHERE call_id = (SELECT call_id FROM settled_calls ORDER BY call_id LIMIT 1)`,
        /call \S+ is settled as a call its outcome record does not describe/,
      ],
      [
        'a settled call moved to another batch',
        `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls) VALUES (2, 'ep', 0, 1, 0, 0, 0, 0, 0); UPDATE settled_calls SET batch_id = 2 WHERE outcome = 'client_error' OR call_id = (SELECT call_id FROM settled_calls ORDER BY call_id LIMIT 1)`,
        /batch [12] does not match/,
      ],
      [
        'a call settled in a batch that does not exist',
        `${kind === 'sqlite' ? 'PRAGMA foreign_keys = OFF; ' : ''}UPDATE settled_calls SET batch_id = 99 WHERE call_id = (SELECT call_id FROM settled_calls ORDER BY call_id LIMIT 1)`,
        /is settled in batch 99, which does not exist/,
      ],
      ['a premium on a failure', `UPDATE settled_calls SET premium = 5 WHERE outcome = 'server_error'`, /a premium on a server_error call/],
      [
        'a refund raised',
        `UPDATE settled_calls SET refund = refund + 1, refund_owed = refund_owed + 1 WHERE outcome = 'server_error'`,
        /batch 1 does not match|ledger entries/,
      ],
      ['a clamp dropped', `UPDATE settled_calls SET clamp = NULL WHERE clamp IS NOT NULL`, /a clamp that does not match/],
      [
        'a per-call cap marked on a refund paid in full',
        `UPDATE settled_calls SET clamp = 'call_capped' WHERE clamp IS NULL AND outcome = 'server_error'`,
        /a clamp that does not match/,
      ],
      ['a batch total edited', `UPDATE settlement_batches SET premiums = premiums + 1`, /batch 1 does not match/],
    ];
    for (const [label, sql, pattern] of corruptions) {
      await t.test(label, async (t) => {
        const { store, exec } = await openWithSql(t, kind);
        await saveEndpoint(store, 'ep', { treasury_fee_bps: 1000 });
        await fund(store, 1500);
        await store.outcomes.ingest(
          [outcome(), outcome({ outcome: 'server_error' }), outcome({ outcome: 'server_error' }), outcome({ key_id: 'key_b' })],
          T0,
        );
        await settleAll(store);
        t.ok((await store.ledger.verify()).ok, `${label}: fine before`);
        await exec(sql);
        const result = await store.ledger.verify();
        t.notOk(result.ok, `${label}: caught`);
        t.match(result.violation, pattern, `${label}: ${result.violation}`);
      });
    }
  });
});

t.test('batches booked one transfer per key, as before, verify beside batches booked one per kind', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    await saveEndpoint(store, 'ep', { price: 1000, premium: 100, treasury_fee_bps: 500 });
    await fund(store, 100_000);
    const shipment = (start: number) =>
      (['ok', 'server_error', 'ok', 'network_error', 'ok', 'ok'] as Outcome[]).map((k, i) =>
        outcome({ outcome: k, key_id: ['key_a', 'key_b', 'key_c'][i % 3]!, started: start + i }),
      );
    const kinds = async (batch: number) => byTransfer(await batchPostings(at, batch)).map((ps) => ps[0]!.kind);
    await store.outcomes.ingest(shipment(T0), T0);
    const [first] = await settleAll(store);
    await splitPerKey(at, first!.id);
    t.same(
      await kinds(first!.id),
      ['premium', 'premium', 'premium', 'treasury_fee', 'refund', 'refund'],
      'booked again one per key: three premiums, the fee, two refunds',
    );
    t.ok((await store.ledger.verify()).ok, 'the old shape verifies');

    await store.outcomes.ingest(shipment(T0 + 100), T0 + 1);
    const [second] = await settleAll(store);
    t.same(await kinds(second!.id), ['premium', 'treasury_fee', 'refund'], 'the next batch books one per kind');
    const verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? '');
    t.equal(verified.counts.transfers, 1 + 6 + 3, "the funding, the first batch's six, the second's three");
  });
});
