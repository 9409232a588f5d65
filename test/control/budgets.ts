/**
 * Prepaid budgets in the store (control/store/budgets.ts), on both databases: grants come only
 * from free money, so however many instances ask at once the escrows never hold more than the
 * balance; an instance left short makes control ask the others for their excess; ingested
 * reserved calls count as spent, and as reserved until they settle; a drained instance's
 * escrow is released; `ledger verify` holds throughout.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Store } from '../../control/store';
import { heldBy } from '../../control/store/budgets';
import type { OutcomeRecord } from '../../protocol/outcome';
import { insertKey } from '../fixtures/ledger';
import { forEachStore, openTestStore } from '../fixtures/stores';

const T0 = Date.parse('2026-11-29T12:00:00Z');
const PREMIUM = 1_000;

async function funded(store: Store, amount: number): Promise<string> {
  await insertKey(store, 'key_a', T0);
  await store.ledger.deposit('acc_a', amount, 'first', T0, 'root');
  return 'acc_a';
}

const reserved = (instance: string, gateway: string, n: number): OutcomeRecord[] =>
  Array.from({ length: n }, () => ({
    call_id: randomUUID(),
    key_id: 'key_a',
    endpoint_id: 'ep',
    method: 'POST',
    status: 200,
    outcome: 'ok',
    latency_ms: 5,
    started_at: new Date(T0).toISOString(),
    gateway_id: gateway,
    reserved: PREMIUM,
    instance,
  }));

forEachStore(t, (t, kind) => {
  t.test('one instance alone gets all the free money; a second is left short until the first gives back', async (t) => {
    const store = await openTestStore(t, kind);
    const account = await funded(store, 10 * PREMIUM);
    t.same(await store.budgets.grant(account, 'gw-1', 'i1', PREMIUM, T0), { granted: 10 * PREMIUM, short: false });
    t.same(await store.budgets.grant(account, 'gw-2', 'i2', PREMIUM, T0 + 1), { granted: 0, short: true }, 'nothing is free');
    t.same(await store.budgets.shortOf('gw-1', 'i1', T0 + 2), [account], 'the first learns another is short of its account');
    t.same(
      await store.budgets.report(account, 'gw-1', 'i1', 0, T0 + 2),
      { granted: 10 * PREMIUM, ask: 5 * PREMIUM },
      'asked for its excess: half',
    );
    t.same(await store.budgets.report(account, 'gw-1', 'i1', 5 * PREMIUM, T0 + 3), { granted: 10 * PREMIUM, ask: 0 });
    t.same(await store.budgets.grant(account, 'gw-2', 'i2', PREMIUM, T0 + 4), { granted: 5 * PREMIUM, short: false }, 'what came back');
    t.same(
      await store.budgets.report(account, 'gw-1', 'i1', 2 * PREMIUM, T0 + 5),
      { granted: 10 * PREMIUM, ask: 0 },
      'returns never shrink',
    );
    t.equal((await store.budgets.holding(account)).held, 10 * PREMIUM, 'the escrows hold the balance, no more');
    t.equal(await store.budgets.grant('acc_none', 'gw-1', 'i1', PREMIUM, T0), null, 'an unknown account');
    t.equal(await store.budgets.report(account, 'gw-3', 'i9', 0, T0), null, 'an instance without an escrow');
  });

  t.test("a gateway with a limit share holds that share of the account's money", async (t) => {
    const store = await openTestStore(t, kind);
    const account = await funded(store, 10 * PREMIUM);
    for (const gw of ['gw-1', 'gw-2']) await store.gateways.attach(gw, 'control-1', null, T0);
    await store.gateways.recordShares(
      new Map([
        ['gw-1', 0.25],
        ['gw-2', 0.25],
      ]),
    );
    t.same(await store.budgets.grant(account, 'gw-1', 'i1', 0, T0), { granted: 2_500, short: false }, 'a quarter, not all');
    t.same(
      await store.budgets.grant(account, 'gw-2', 'i2', PREMIUM, T0),
      { granted: 2_500, short: false },
      'the next gateway finds its quarter free',
    );
    t.same(await store.budgets.grant(account, 'gw-1', 'i1', 0, T0 + 1), { granted: 2_500, short: false }, 'at its share: nothing more');
    t.same(
      await store.budgets.grant(account, 'gw-1', 'i1', 4 * PREMIUM, T0 + 2),
      { granted: 6_500, short: false },
      'a need past its share is met from free money',
    );
    t.same(
      await store.budgets.grant(account, 'gw-1', 'i1', 2 * PREMIUM, T0 + 3),
      { granted: 7_500, short: true },
      'what is free, and short: the need is more',
    );
    t.same(
      await store.budgets.report(account, 'gw-2', 'i2', 0, T0 + 4),
      { granted: 2_500, ask: 0 },
      'the other holds no more than its share',
    );
  });

  t.test('many instances asking at once never hold more than the balance', async (t) => {
    const store = await openTestStore(t, kind);
    const account = await funded(store, 37 * PREMIUM);
    const instances = Array.from({ length: 12 }, (_, i) => ({ gateway: `gw-${i % 4}`, instance: `i${i}` }));
    for (let round = 0; round < 4; round++) {
      await Promise.all(instances.map((x, i) => store.budgets.grant(account, x.gateway, x.instance, PREMIUM * (i % 3), T0 + round)));
      const money = await store.budgets.money(account);
      const held = money.escrows.reduce((sum, e) => sum + heldBy(e), 0);
      t.ok(held <= 37 * PREMIUM, `round ${round}: escrows hold ${held} of ${37 * PREMIUM}`);
      t.equal(
        money.escrows.reduce((sum, e) => sum + e.granted, 0),
        held,
        'nothing spent or returned yet: held is granted',
      );
    }
    t.equal((await store.ledger.verify()).ok, true);
  });

  t.test('ingested reserved calls are spent and reserved; settled, they are charged; a drained instance is released', async (t) => {
    const store = await openTestStore(t, kind);
    const account = await funded(store, 10 * PREMIUM);
    t.same(await store.budgets.grant(account, 'gw-1', 'old', 0, T0), { granted: 10 * PREMIUM, short: false });
    await store.outcomes.ingest(reserved('old', 'gw-1', 3), T0 + 10);
    const replay = reserved('old', 'gw-1', 1);
    await store.outcomes.ingest(replay, T0 + 11);
    await store.outcomes.ingest(replay, T0 + 12);
    let money = await store.budgets.money(account);
    t.equal(money.escrows[0]!.spent, 4 * PREMIUM, 'four calls spent, the replayed one once');
    t.equal(money.reserved, 4 * PREMIUM);
    t.same(await store.budgets.holding(account), { balance: 10 * PREMIUM, reserved: 4 * PREMIUM, held: 6 * PREMIUM });
    t.equal((await store.ledger.verify()).ok, true, 'verify holds with reservations and an escrow');

    t.same(
      await store.budgets.grant(account, 'gw-1', 'new', PREMIUM, T0 + 20),
      { granted: 0, short: true },
      'the old instance still holds the rest',
    );
    t.equal(await store.budgets.release('gw-1', 'new', T0 + 21), 1, 'its journal drained: the old instance is released');
    t.same(await store.budgets.grant(account, 'gw-1', 'new', PREMIUM, T0 + 22), { granted: 6 * PREMIUM, short: false });
    money = await store.budgets.money(account);
    t.same(
      money.escrows.map((e) => e.instance),
      ['new'],
      'only the new instance is open',
    );
    t.equal((await store.ledger.verify()).ok, true);
  });
});
