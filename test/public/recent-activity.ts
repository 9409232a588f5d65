/**
 * `recent_activity` in the indexer's `/api/stats` is the last N *settled* calls (docs/design.md §7):
 * the calls of the latest settlement batches, newest batch first. Calls still waiting for the
 * settler are not in it; they stay visible in `/api/activity`.
 */
import t from 'tap';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { manualClock, startTestControl } from '../fixtures/control';
import { addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

forEachStore(t, (t, kind) => {
  t.test('recent_activity lists settled calls only; /api/activity still shows the unsettled ones', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_SETTLER_CADENCE_MS: '3600000', SVC_CACHE_STATS_TTL_S: '1', SVC_PUBLIC_RECENT_ACTIVITY: '4' },
    });
    await addEndpoint(control, 'weather', { price: 1_000, premium: 100 });
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1_000_000 })).status, 201);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const opaque = (records: { call_id: string }[]) => records.map((r) => ids.call(r.call_id));
    const callIds = (items: { call_id: string }[]) => items.map((a) => a.call_id);

    // First batch: three calls. Second batch: two calls that started *before* the first three.
    const first = many(3, (i) => outcome({ endpoint_id: 'weather', at: NOW - 60_000 + i * 1000 }));
    await ingest(control, first);
    t.equal((await control.admin('POST', '/_admin/v1/settler/run-once', {})).body.calls, 3);
    const second = many(2, (i) => outcome({ endpoint_id: 'weather', at: NOW - 120_000 + i * 1000, outcome: 'server_error', status: 500 }));
    await ingest(control, second);
    t.equal((await control.admin('POST', '/_admin/v1/settler/run-once', {})).body.calls, 2);
    // Newest of all, and not settled.
    const pending = many(3, (i) => outcome({ endpoint_id: 'weather', at: NOW - 1_000 + i * 100 }));
    await ingest(control, pending);

    clock.advance(2_000);
    const stats = await get(control, control.urls.indexer, '/api/stats');
    t.equal(stats.status, 200);
    t.equal(stats.body.unsettled_calls, 3, 'three calls wait for the settler');
    const recent = stats.body.recent_activity as { call_id: string; settled: boolean; batch: number | null }[];
    t.equal(recent.length, 4, 'public.recentActivity calls');
    t.ok(
      recent.every((a) => a.settled && a.batch !== null),
      'every listed call is settled',
    );
    for (const id of opaque(pending)) t.notOk(callIds(recent).includes(id), 'a call not settled yet is not in recent_activity');
    t.same(
      callIds(recent),
      [...opaque(second).reverse(), ...opaque(first).reverse()].slice(0, 4),
      'the latest batch first, newest call first within a batch',
    );

    const page = await get(control, control.urls.indexer, '/api/activity?limit=10');
    t.equal(page.status, 200);
    t.same(callIds(page.body.activity.slice(0, 3)), opaque(pending).reverse(), '/api/activity lists the unsettled calls, newest first');
    t.ok(
      page.body.activity.slice(0, 3).every((a: { settled: boolean }) => !a.settled),
      'marked as not settled',
    );
    t.equal(page.body.activity.length, 8, 'and every settled one');
  });

  t.test('recent_activity is empty until something is settled', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { SVC_SETTLER_CADENCE_MS: '3600000' } });
    await addEndpoint(control, 'weather');
    await ingest(
      control,
      many(5, (i) => outcome({ endpoint_id: 'weather', at: NOW - 5_000 + i })),
    );
    const stats = await get(control, control.urls.indexer, '/api/stats');
    t.equal(stats.body.total_calls, 5);
    t.same(stats.body.recent_activity, [], 'no settled call yet');
    const page = await get(control, control.urls.indexer, '/api/activity');
    t.equal(page.body.activity.length, 5, 'the calls are in /api/activity');
  });
});
