// Group commits at the store level, on each store: a group is all or nothing, a settler run's
// groups go on from one to the next, and no batch of a group overdraws the pool. Single
// batches are `ledger.ts`.
import t from 'tap';
import { planBatch } from '../../control/settler/plan';
import type { NextBatch } from '../../control/store/settlement';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { T0, fund, rowsOf, settleAll } from '../fixtures/ledger';
import { forEachStore, openTestStore } from '../fixtures/stores';

t.test('a group commit is all or nothing, and each batch in it is whole', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'a');
    await saveEndpoint(store, 'b');
    await fund(store, 1_000_000);
    await store.outcomes.ingest(
      [
        outcome({ endpoint_id: 'a' }),
        outcome({ endpoint_id: 'b', outcome: 'server_error' }),
        outcome({ endpoint_id: 'a', outcome: 'server_error' }),
      ],
      T0,
    );
    /** Names each of `order` in turn, then ends the group. */
    const picks = (order: { endpointId: string; cap: number }[]): NextBatch => ({
      next: () => order.shift() ?? null,
      startRound: () => undefined,
    });
    const queue = () =>
      picks([
        { endpointId: 'a', cap: 1 },
        { endpointId: 'b', cap: 1 },
        { endpointId: 'a', cap: 1 },
      ]);
    let calls = 0;
    const failing = (input: Parameters<typeof planBatch>[0]) => {
      if (++calls === 2) throw new Error('planner failed on the second batch');
      return planBatch(input);
    };
    await t.rejects(store.settlement.settleGroup(queue(), T0, T0, failing, 100), /second batch/);
    t.equal((await store.settlement.backlog()).count, 3, 'the first batch of the group was rolled back too');
    t.equal(await store.ledger.settledBatches(), 0);
    const made = await store.settlement.settleGroup(queue(), T0, T0, planBatch, 100);
    t.same(
      made.map((b) => [b.endpoint_id, b.calls]),
      [
        ['a', 1],
        ['b', 1],
        ['a', 1],
      ],
      'three whole batches in one commit',
    );
    t.same((await store.settlement.settleGroup(queue(), T0, T0, planBatch, 1)).length, 0, 'nothing left');
    t.same(
      await store.settlement.settleGroup(picks([{ endpointId: 'a', cap: 5 }]), T0, T0, planBatch, 1),
      [],
      'an endpoint with nothing pending gives no batch',
    );
    t.ok((await store.ledger.verify()).ok);
  });
});

t.test("a run's groups go on where the last one ended; a call ingested behind them is settled by the next run", async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'a');
    await fund(store, 1_000_000);
    const queued = [0, 1, 2, 3].map((i) => outcome({ endpoint_id: 'a', started: T0 + i }));
    await store.outcomes.ingest(queued, T0);
    // One run: the same NextBatch for each of its groups, one batch of one call per group.
    const run: NextBatch = { next: () => ({ endpointId: 'a', cap: 1 }), startRound: () => undefined };
    const boundary = T0 + 10;
    const first = await store.settlement.settleGroup(run, boundary, T0, planBatch, 1);
    t.same(
      first.map((b) => b.calls),
      [1],
    );
    t.equal((await store.outcomes.byCallId(queued[0]!.call_id))?.settled_batch, first[0]!.id, 'the oldest call first');
    // Received before the call the first group settled (another control's clock behind).
    const late = outcome({ endpoint_id: 'a', started: T0 - 100 });
    await store.outcomes.ingest([late], T0 - 5);
    const second = await store.settlement.settleGroup(run, boundary, T0, planBatch, 1);
    t.same(
      second.map((b) => b.calls),
      [1],
    );
    const settledSecond = (await store.outcomes.byCallId(queued[1]!.call_id))?.settled_batch;
    if (kind === 'postgres') t.equal(settledSecond, second[0]!.id, 'the run read on past its first group');
    // The next run: a new NextBatch, rounds over the pending endpoints until none is left.
    const made = await settleAll(store, 1000, boundary);
    const all = [...queued, late];
    const rows = await rowsOf(store, all);
    t.ok(
      rows.every((r) => r.settled_batch !== null),
      'every call settled',
    );
    t.equal(new Set(rows.map((r) => r.call_id)).size, all.length);
    t.equal(
      [...first, ...second, ...made].reduce((n, b) => n + b.calls, 0),
      all.length,
      'each call in exactly one batch',
    );
    t.equal((await store.settlement.backlog()).count, 0);
    t.ok((await store.ledger.verify()).ok, 'ledger verify passes');
  });
});

t.test('a batch that would overdraw the pool is refused, even when a later batch of its group refills it', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await saveEndpoint(store, 'a');
    await saveEndpoint(store, 'b'); // premium 100, no fee
    await fund(store, 1_000);
    const failed = outcome({ endpoint_id: 'a', outcome: 'server_error', key_id: 'key_a' });
    const paid = Array.from({ length: 20 }, () => outcome({ endpoint_id: 'b', key_id: 'key_b' }));
    await store.outcomes.ingest([failed, ...paid], T0);
    // A planner blind to the pool for endpoint a: it refunds the call's 1,100 in full from a pool
    // of 1,000; b's 20 premiums (2,000) would bring the pool back above zero by the group's end.
    const overdraws = (input: Parameters<typeof planBatch>[0]) =>
      planBatch(input.endpointId === 'a' ? { ...input, pool: Number.MAX_SAFE_INTEGER } : input);
    const order = () => {
      const left = ['a', 'b'];
      return { next: () => (left.length > 0 ? { endpointId: left.shift()!, cap: 100 } : null), startRound: () => undefined };
    };
    await t.rejects(store.settlement.settleGroup(order(), T0, T0, overdraws, 1_000));
    t.equal((await store.settlement.backlog()).count, 21, 'every call is still queued');
    t.equal(await store.ledger.balance('pool'), 1_000, 'the pool is as funded');
    t.equal(await store.ledger.settledBatches(), 0);
    const made = await store.settlement.settleGroup(order(), T0, T0, planBatch, 1_000);
    t.same(
      made.map((b) => [b.endpoint_id, b.refunds, b.premiums]),
      [
        ['a', 1_000, 0],
        ['b', 0, 2_000],
      ],
      'planned as it should be, the same group settles',
    );
    t.ok((await store.ledger.verify()).ok);
  });
});
