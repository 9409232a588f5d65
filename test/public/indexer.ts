/**
 * The indexer ({indexer_url}): `/api/stats` reads the ledger (zero until the real settler
 * has settled something, never invented), `recent_activity` lists the last settled calls and `/api/activity` every call,
 * newest first with opaque ids, paged by sealed cursors.
 */
import t from 'tap';
import { manualClock, startTestControl, type AdminResponse } from '../fixtures/control';
import { addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';
import { OpaqueIds } from '../../protocol/opaque-ids';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

/** Settler on a cadence the test never reaches: settlement happens when the test says so. */
const MANUAL_SETTLER = { SVC_SETTLER_CADENCE_MS: '3600000' };

forEachStore(t, (t, kind) => {
  t.test('stats are zero until the settler has settled something, then they are the ledger’s numbers', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { ...MANUAL_SETTLER, SVC_CACHE_STATS_TTL_S: '1' } });
    await addEndpoint(control, 'weather', { price: 2_000_000, premium: 100_000, treasury_fee_bps: 0, refund_cap_per_hour: 0 });
    const key = await control.admin('POST', '/_admin/v1/keys', { name: 'agent' });
    t.equal(key.status, 201);
    const keyId: string = key.body.id;
    const ok = many(8, (i) => outcome({ endpoint_id: 'weather', key_id: keyId, at: NOW - 10_000 + i }));
    const failed = many(2, (i) =>
      outcome({ endpoint_id: 'weather', key_id: keyId, at: NOW - 5_000 + i, outcome: 'server_error', status: 500 }),
    );
    await ingest(control, [...ok, ...failed]);

    const before = await get(control, control.urls.indexer, '/api/stats');
    t.equal(before.status, 200);
    t.match(before.body, {
      pool_size: 0,
      settled_batches: 0,
      settled_calls: 0,
      total_refunds: 0,
      total_premiums: 0,
      total_calls: 10,
      unsettled_calls: 10,
      amount_decimals: 6,
      settler: 'idle',
      last_batch_at: null,
      updated_at: new Date(NOW).toISOString(),
    });
    t.same(before.body.recent_activity, [], 'recent_activity lists settled calls only');
    const pendingPage = await get(control, control.urls.indexer, '/api/activity');
    t.equal(pendingPage.body.activity.length, 10, 'unsettled calls are in /api/activity');
    t.match(
      pendingPage.body.activity[0],
      { outcome: 'server_error', settled: false, batch: null, premium: null, refund: null },
      'newest first; unsettled calls carry no money',
    );

    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 50_000_000 })).status, 201, 'pool funded');
    clock.advance(1_000);
    const run = await control.admin('POST', '/_admin/v1/settler/run-once', {});
    t.equal(run.status, 200, run.text);
    t.equal(run.body.calls, 10, 'the settler settled the ten calls');

    clock.advance(1_000);
    const after = await get(control, control.urls.indexer, '/api/stats');
    t.match(after.body, {
      pool_size: 50_000_000 + 800_000 - 4_200_000,
      settled_batches: 1,
      settled_calls: 10,
      total_refunds: 4_200_000,
      total_refunds_owed: 4_200_000,
      total_premiums: 800_000,
      total_calls: 10,
      unsettled_calls: 0,
      last_batch_at: new Date(NOW + 1_000).toISOString(),
    });
    const pool = await control.admin('GET', '/_admin/v1/pool');
    t.equal(after.body.pool_size, pool.body.pool, 'the same pool balance as `svcctl pool show`');
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const newest = after.body.recent_activity[0];
    t.match(newest, {
      provider: ids.provider('weather'),
      outcome: 'server_error',
      status: 500,
      settled: true,
      batch: run.body.batches[0].id,
      premium: 0,
      refund: 2_100_000,
    });
    t.match(after.body.recent_activity[9], { outcome: 'ok', settled: true, premium: 100_000, refund: 0 });
    t.equal(newest.call_id, ids.call(failed[1]!.call_id), 'an opaque call id (call_…)');
    t.match(newest.call_id, /^call_[1-9A-HJ-NP-Za-km-z]{16}$/);
    for (const r of [...ok, ...failed]) t.notOk(after.text.includes(r.call_id), 'no raw call id in the answer');
    t.notOk(after.text.includes('weather'), 'no endpoint id in the answer');
    t.notOk(after.text.includes('gw-test'), 'no gateway id in the answer');
    t.notOk(after.text.includes(keyId), 'no key id in the answer');

    const page = await get(control, control.urls.indexer, '/api/activity?limit=2');
    t.same(page.body.activity, after.body.recent_activity.slice(0, 2), '/api/activity shows the same calls the same way');
  });

  t.test('/api/activity pages newest first through sealed cursors', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: {
        ...MANUAL_SETTLER,
        SVC_PUBLIC_ACTIVITY_PAGE_SIZE: '4',
        SVC_PUBLIC_ACTIVITY_MAX_PAGE_SIZE: '10',
        SVC_PUBLIC_RECENT_ACTIVITY: '3',
      },
    });
    await addEndpoint(control, 'paged');
    // 23 calls; five share one millisecond so the cursor must break ties by call id.
    const records = [
      ...many(18, (i) => outcome({ endpoint_id: 'paged', at: NOW - 100_000 + i * 1000, latency_ms: i })),
      ...many(5, () => outcome({ endpoint_id: 'paged', at: NOW - 50_500, latency_ms: 999 })),
    ];
    await ingest(control, records);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const expected = [...records]
      .sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at) || (a.call_id < b.call_id ? 1 : -1))
      .map((r) => ids.call(r.call_id));

    t.equal((await control.admin('POST', '/_admin/v1/settler/run-once', {})).body.calls, 23, 'all settled in one batch');
    const stats = await get(control, control.urls.indexer, '/api/stats');
    t.same(
      stats.body.recent_activity.map((a: { call_id: string }) => a.call_id),
      expected.slice(0, 3),
      'recent_activity: public.recentActivity newest settled calls',
    );

    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const res: AdminResponse = await get(control, control.urls.indexer, `/api/activity?limit=7${before ? `&before=${before}` : ''}`);
      t.equal(res.status, 200);
      t.equal(res.body.limit, 7);
      seen.push(...res.body.activity.map((a: { call_id: string }) => a.call_id));
      before = res.body.next_before;
      if (before !== null) {
        t.match(before, /^[A-Za-z0-9_-]+$/, 'cursor is base64url');
        const decoded = Buffer.from(before, 'base64url').toString('latin1');
        for (const r of records)
          t.notOk(decoded.includes(r.call_id) || before.includes(r.call_id), 'the cursor does not carry a raw call id');
      }
      pages++;
    } while (before !== null && pages < 10);
    t.equal(pages, 4, '23 calls in pages of 7: 4 pages, the last one says so with next_before null');
    t.same(seen, expected, 'every call once, newest first, ties broken consistently');

    const dflt = await get(control, control.urls.indexer, '/api/activity');
    t.equal(dflt.body.activity.length, 4, 'default page size from public.activityPageSize');

    const byTime = await get(control, control.urls.indexer, `/api/activity?before=${new Date(NOW - 90_000).toISOString()}&limit=10`);
    t.equal(byTime.status, 200);
    t.equal(byTime.body.activity.length, 10, 'an ISO time works as before');
    t.same(
      byTime.body.activity.map((a: { call_id: string }) => a.call_id),
      expected.slice(13, 23),
      'calls that started strictly earlier',
    );

    for (const [query, what] of [
      ['limit=11', 'limit above public.activityMaxPageSize'],
      ['limit=0', 'limit 0'],
      ['limit=abc', 'limit not a number'],
      ['before=not-a-cursor', 'a made-up cursor'],
      [`before=${'A'.repeat(60)}`, 'a cursor this indexer did not seal'],
    ] as const) {
      const res = await get(control, control.urls.indexer, `/api/activity?${query}`);
      t.equal(res.status, 400, `${what}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
    }
  });
});
