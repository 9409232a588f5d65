/**
 * The public API's and the indexer's reads (`publicReads`) answer the same on every store: the
 * recorded calls newest first, paged by (started_at, call_id) with no call lost or repeated
 * across pages, calls sharing a start time included; the settled calls owed a refund, of all
 * endpoints or of one; the latest settlement batches.
 */
import t from 'tap';
import { planBatch } from '../../control/settler/plan';
import type { Store } from '../../control/store';
import type { ActivityRow } from '../../control/store/public-reads';
import type { OutcomeRecord } from '../../protocol/outcome';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { forEachStore, openTestStore } from '../fixtures/stores';

const T0 = Date.UTC(2030, 0, 1, 12);

/** Newest first, as the store orders calls: by start time, then call id. */
const newestFirst = (a: { started: number; call_id: string }, b: { started: number; call_id: string }) =>
  b.started - a.started || (a.call_id < b.call_id ? 1 : a.call_id > b.call_id ? -1 : 0);

async function settleAll(store: Store) {
  const made = [];
  for (;;) {
    let progressed = false;
    for (const ep of await store.settlement.pendingEndpoints(T0 + 1e9)) {
      const batch = await store.settlement.settleBatch(ep, T0 + 1e9, 4, T0 + 10, planBatch);
      if (batch) {
        made.push(batch);
        progressed = true;
      }
    }
    if (!progressed) return made;
  }
}

forEachStore(t, (t, kind) => {
  t.test('activity pages through every call once, newest first, calls of one instant included', async (t) => {
    const store = await openTestStore(t, kind);
    t.same(await store.publicReads.activity(5, null), [], 'no calls: an empty page');
    const records: OutcomeRecord[] = [];
    for (let i = 0; i < 13; i++) records.push(outcome({ started: T0 + Math.floor(i / 3), endpoint_id: i % 2 ? 'a' : 'b' }));
    await store.outcomes.ingest(records, T0 + 100);
    const want = records
      .map((r) => ({ started: Date.parse(r.started_at), call_id: r.call_id }))
      .sort(newestFirst)
      .map((r) => r.call_id);

    const seen: ActivityRow[] = [];
    let before: ActivityRow | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page = await store.publicReads.activity(4, before && { started_at: before.started_at, call_id: before.call_id });
      seen.push(...page);
      if (page.length < 4) break;
      before = page[page.length - 1]!;
    }
    t.same(
      seen.map((r) => r.call_id),
      want,
      'every call once, by start time then call id, newest first',
    );
    const first = records.find((r) => r.call_id === want[0])!;
    t.same(
      seen[0],
      {
        call_id: first.call_id,
        endpoint_id: first.endpoint_id,
        outcome: 'ok',
        status: 200,
        latency_ms: 5,
        started_at: Date.parse(first.started_at),
        settled_batch: null,
        premium: null,
        refund: null,
        clamp: null,
      },
      'an unsettled call: its columns, no amounts yet',
    );
  });

  t.test('refunds: settled calls owed one, newest first; batches: newest first', async (t) => {
    const store = await openTestStore(t, kind);
    t.same(await store.publicReads.refunds(5), [], 'nothing settled: no refunds');
    t.same(await store.publicReads.batches(5), [], 'nothing settled: no batches');
    await saveEndpoint(store, 'ep1', { premium: 100 }, T0);
    await saveEndpoint(store, 'ep2', { premium: 300 }, T0);
    await store.mutate({ actor: 'test', now: T0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000, T0, 'test', null));
    const records = [
      outcome({ endpoint_id: 'ep1', outcome: 'ok', started: T0 }),
      outcome({ endpoint_id: 'ep1', outcome: 'server_error', started: T0 + 1 }),
      outcome({ endpoint_id: 'ep1', outcome: 'server_error', key_id: null, started: T0 + 2 }), // keyless: owed nothing
      outcome({ endpoint_id: 'ep1', outcome: 'latency_breach', started: T0 + 3 }),
      outcome({ endpoint_id: 'ep1', outcome: 'network_error', started: T0 + 3 }),
      outcome({ endpoint_id: 'ep2', outcome: 'network_error', started: T0 + 2 }),
      outcome({ endpoint_id: 'ep2', outcome: 'client_error', started: T0 + 4 }), // not covered
      outcome({ endpoint_id: 'ep2', outcome: 'ok', started: T0 + 5 }),
    ];
    await store.outcomes.ingest(records, T0 + 5);
    const batches = await settleAll(store);
    t.ok(batches.length >= 3, `settled in batches of at most 4 (${batches.length})`);

    const owed = (endpoint: string | null) =>
      records
        .filter((r) => r.key_id !== null && ['server_error', 'latency_breach', 'network_error'].includes(r.outcome))
        .filter((r) => endpoint === null || r.endpoint_id === endpoint)
        .map((r) => ({ started: Date.parse(r.started_at), call_id: r.call_id }))
        .sort(newestFirst)
        .map((r) => r.call_id);
    const all = await store.publicReads.refunds(10);
    t.same(
      all.map((r) => r.call_id),
      owed(null),
      'every call owed a refund, newest first',
    );
    t.ok(
      all.every((r) => r.settled_batch !== null && r.refund! > 0 && r.clamp === null),
      'settled and paid in full',
    );
    t.same(
      (await store.publicReads.refunds(2)).map((r) => r.call_id),
      owed(null).slice(0, 2),
      'limited to the newest',
    );
    t.same(
      (await store.publicReads.refunds(10, 'ep2')).map((r) => r.call_id),
      owed('ep2'),
      'of one endpoint',
    );
    t.same(await store.publicReads.refunds(10, 'ep3'), [], 'an endpoint without calls: none');

    const byId = [...batches].sort((a, b) => b.id - a.id);
    const summary = (await store.publicReads.batches(10)).map((b) => b);
    t.same(
      summary.map((b) => b.id),
      byId.map((b) => b.id),
      'every batch, newest first',
    );
    for (const [i, b] of byId.entries()) {
      t.same(summary[i], {
        id: b.id,
        endpoint_id: b.endpoint_id,
        created_at: T0 + 10,
        calls: b.calls,
        premiums: b.premiums,
        refunds: b.refunds,
        refunds_owed: b.refunds_owed,
        clamped_calls: b.clamped_calls,
      });
    }
    t.same(
      (await store.publicReads.batches(1)).map((b) => b.id),
      [byId[0]!.id],
      'limited to the newest',
    );
  });
});
