/**
 * `GET {api_url}/api/v1/providers` in-process, with an injected clock and outcomes ingested
 * through the real sync endpoint at chosen times: failure rate and tier per provider, the
 * rolling window's edges, UNRATED, duplicates never counted twice, latency percentiles, and
 * ids that are opaque and stable across restarts.
 */
import t from 'tap';
import { join } from 'node:path';
import { manualClock, startTestControl } from '../fixtures/control';
import { addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore, testDatabaseUrl } from '../fixtures/stores';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { histogramQuantile, tierFor } from '../../control/public/reads';
import { LATENCY_BOUNDS_MS, latencyBucket } from '../../control/store/rollups';

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** Minute-aligned, so the window's start falls on a minute boundary. */
const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

forEachStore(t, (t, kind) => {
  t.test('failure rate and tier per provider over the window', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { SVC_TIERS_MIN_CALLS: '20' } });
    for (const id of ['steady', 'wobbly', 'flaky', 'sparse', 'idle']) await addEndpoint(control, id);

    const at = NOW - 10 * MINUTE;
    await ingest(control, [
      // 200 calls, 1 covered failure (0.5 %), plus 30 client errors that must not count.
      ...many(199, () => outcome({ endpoint_id: 'steady', at })),
      outcome({ endpoint_id: 'steady', at, outcome: 'server_error', status: 500 }),
      ...many(30, () => outcome({ endpoint_id: 'steady', at, outcome: 'client_error', status: 404 })),
      // 100 calls, 3 failures of three covered kinds (3 %).
      ...many(97, () => outcome({ endpoint_id: 'wobbly', at })),
      outcome({ endpoint_id: 'wobbly', at, outcome: 'latency_breach', latency_ms: 9000 }),
      outcome({ endpoint_id: 'wobbly', at, outcome: 'network_error', status: 502 }),
      outcome({ endpoint_id: 'wobbly', at, outcome: 'schema_mismatch' }),
      // 40 calls, 10 failures (25 %).
      ...many(30, () => outcome({ endpoint_id: 'flaky', at })),
      ...many(10, () => outcome({ endpoint_id: 'flaky', at, outcome: 'server_error', status: 503 })),
      // 19 calls, all failing, but fewer than tiers.minCalls.
      ...many(19, () => outcome({ endpoint_id: 'sparse', at, outcome: 'server_error', status: 500 })),
    ]);

    const res = await get(control, control.urls.api, '/api/v1/providers');
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^application\/json/);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const byName = (name: string) => res.body.providers.find((p: { id: string }) => p.id === ids.provider(name));
    t.equal(res.body.providers.length, 5, 'every registered endpoint is a provider');

    t.match(byName('steady'), { tier: 'RELIABLE', failure_rate: 0.005, calls: 200, failures: 1, client_errors: 30, window_h: 24 });
    t.match(byName('wobbly'), { tier: 'ELEVATED', failure_rate: 0.03, calls: 100, failures: 3 });
    t.match(byName('flaky'), { tier: 'HIGH_RISK', failure_rate: 0.25, calls: 40, failures: 10 });
    t.match(byName('sparse'), { tier: 'UNRATED', failure_rate: 1, calls: 19 }, 'fewer calls than tiers.minCalls: UNRATED');
    t.match(byName('idle'), { tier: 'UNRATED', failure_rate: 0, calls: 0, latency_ms: null }, 'no calls: UNRATED, rate 0');
    t.same(res.body.thresholds, { reliable_below: 0.01, elevated_up_to: 0.05 });
    t.equal(res.body.min_calls, 20);
    t.equal(res.body.updated_at, new Date(NOW).toISOString(), 'computed at the injected clock');

    for (const p of res.body.providers) {
      t.match(p.id, /^prv_[1-9A-HJ-NP-Za-km-z]{12}$/, 'opaque id: prv_ + 12 base58 characters');
      t.type(p.failure_rate, 'number');
    }
    t.notMatch(res.text, /steady|wobbly|flaky|sparse|idle|upstream\.example/, 'no endpoint id or upstream URL anywhere in the answer');
  });

  t.test('the rolling window: its start is in, older minutes are out; clock moves expire the cache', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_TIERS_WINDOW_H: '1', SVC_TIERS_MIN_CALLS: '5', SVC_CACHE_PROVIDERS_TTL_S: '10' },
    });
    await addEndpoint(control, 'edge');
    const start = NOW - 1 * HOUR;
    await ingest(control, [
      ...many(10, () => outcome({ endpoint_id: 'edge', at: start })), // exactly at the window start: in
      ...many(10, () => outcome({ endpoint_id: 'edge', at: start + 59_999 })), // same minute: in
      ...many(30, () => outcome({ endpoint_id: 'edge', at: start - 1, outcome: 'server_error', status: 500 })), // 1 ms older: out
      ...many(5, () => outcome({ endpoint_id: 'edge', at: NOW, outcome: 'server_error', status: 500 })), // now: in
    ]);
    const read = async () => (await get(control, control.urls.api, '/api/v1/providers')).body.providers[0];

    t.match(await read(), { calls: 25, failures: 5, failure_rate: 0.2, tier: 'HIGH_RISK', window_h: 1 });

    clock.advance(5_000);
    t.match(await read(), { calls: 25 }, 'within the TTL the cached answer is served');

    clock.advance(MINUTE - 5_000); // the window start moves one minute on: the first 20 calls leave it
    t.match(await read(), { calls: 5, failures: 5, failure_rate: 1, tier: 'HIGH_RISK' }, 'past the TTL a fresh answer, one minute later');

    clock.advance(HOUR);
    t.match(await read(), { calls: 0, failures: 0, failure_rate: 0, tier: 'UNRATED' }, 'an hour later nothing is left in the window');
  });

  t.test('a replayed batch never counts twice; rollups survive a restart; ids are stable', async (t) => {
    const clock = manualClock(NOW);
    const dataDir = join(t.testdir(), 'data');
    const env = { SVC_TIERS_MIN_CALLS: '1' };
    const flags = { databaseUrl: await testDatabaseUrl(t, kind) };
    const first = await startTestControl(t, { now: clock.now, dataDir, env, flags });
    await addEndpoint(first, 'replayed');
    const batch = [
      ...many(8, () => outcome({ endpoint_id: 'replayed', at: NOW - MINUTE })),
      ...many(2, () => outcome({ endpoint_id: 'replayed', at: NOW - MINUTE, outcome: 'network_error', status: 504 })),
    ];
    t.match(await ingest(first, batch), { accepted: 10, duplicates: 0 });
    t.match(await ingest(first, batch), { accepted: 0, duplicates: 10 }, 'the gateway replays the same batch');
    t.match(
      await ingest(first, [...batch.slice(0, 3), outcome({ endpoint_id: 'replayed', at: NOW - MINUTE })]),
      { accepted: 1, duplicates: 3 },
      'a partly new batch',
    );
    const before = (await get(first, first.urls.api, '/api/v1/providers')).body.providers[0];
    t.match(before, { calls: 11, failures: 2 }, 'only inserted rows are counted');
    await first.close();

    const second = await startTestControl(t, { now: clock.now, dataDir, env, flags });
    const after = (await get(second, second.urls.api, '/api/v1/providers')).body.providers[0];
    t.equal(after.id, before.id, 'the opaque id is the same after a restart');
    t.match(after, { calls: 11, failures: 2 }, 'the rollups are durable');
  });

  t.test('opaque ids differ between databases and never echo the endpoint id', async (t) => {
    const a = await startTestControl(t, { store: kind, dataDir: join(t.testdir(), 'a') });
    await addEndpoint(a, 'same-name');
    const idA = (await get(a, a.urls.api, '/api/v1/providers')).body.providers[0].id;
    await a.close();
    const b = await startTestControl(t, { store: kind, dataDir: join(t.testdir(), 'a', '..', 'b') });
    await addEndpoint(b, 'same-name');
    const idB = (await get(b, b.urls.api, '/api/v1/providers')).body.providers[0].id;
    t.not(idA, idB, 'each database has its own secret');
    t.notMatch(idA, /same/);
  });

  t.test('latency percentiles come from the per-minute histogram', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { SVC_TIERS_MIN_CALLS: '1' } });
    await addEndpoint(control, 'timed');
    // 90 calls at 40 ms (bucket 20-50), 10 calls at 900 ms (bucket 750-1000); client errors ignored.
    await ingest(control, [
      ...many(90, (i) => outcome({ endpoint_id: 'timed', at: NOW - (i % 30) * MINUTE, latency_ms: 40 })),
      ...many(10, () => outcome({ endpoint_id: 'timed', at: NOW - MINUTE, latency_ms: 900 })),
      ...many(50, () => outcome({ endpoint_id: 'timed', at: NOW - MINUTE, latency_ms: 60_000, outcome: 'client_error', status: 429 })),
    ]);
    const p = (await get(control, control.urls.api, '/api/v1/providers')).body.providers[0];
    t.ok(p.latency_ms.p50 > 20 && p.latency_ms.p50 <= 50, `p50 ${p.latency_ms.p50} in the 20-50 ms bucket`);
    t.ok(p.latency_ms.p95 > 750 && p.latency_ms.p95 <= 1000, `p95 ${p.latency_ms.p95} in the 750-1000 ms bucket`);
  });
});

t.test('tier thresholds and histogram helpers', async (t) => {
  const tiers = { reliableBelow: 0.01, elevatedUpTo: 0.05, minCalls: 20, windowH: 24 };
  const cases: [number, number, string][] = [
    [0, 20, 'RELIABLE'],
    [0.0099, 1000, 'RELIABLE'],
    [0.01, 1000, 'ELEVATED'],
    [0.05, 1000, 'ELEVATED'],
    [0.0501, 1000, 'HIGH_RISK'],
    [1, 1000, 'HIGH_RISK'],
    [0, 19, 'UNRATED'],
    [1, 0, 'UNRATED'],
  ];
  for (const [rate, calls, tier] of cases) t.equal(tierFor(rate, calls, tiers), tier, `${rate} over ${calls} calls → ${tier}`);

  t.equal(latencyBucket(0), 0);
  t.equal(latencyBucket(1), 0);
  t.equal(latencyBucket(2), 1);
  t.equal(latencyBucket(60_000), LATENCY_BOUNDS_MS.length - 1);
  t.equal(latencyBucket(60_001), LATENCY_BOUNDS_MS.length, 'past the last bound: the overflow bucket');
  const empty = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
  t.equal(histogramQuantile(empty, 0.5), null, 'no calls: no percentile');
  const overflow = [...empty];
  overflow[LATENCY_BOUNDS_MS.length] = 3;
  t.equal(histogramQuantile(overflow, 0.95), 60_000, 'the overflow bucket answers its lower bound');
});
