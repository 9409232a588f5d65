/**
 * Migration 4 on a database that already holds outcomes (written by a build at schema 3):
 * the rollups are built from them once, with the same counts and histogram as ingest would
 * produce, and the opaque-id secret is created on first open and kept (SQLite only: a
 * PostgreSQL database starts at the whole schema). How ingest cuts rollups into minutes is
 * checked on both stores.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../control/store/migrations';
import { SqliteStore } from '../../control/store';
import { LATENCY_BOUNDS_MS, latencyBucket, type EndpointWindow } from '../../control/store/rollups';
import { OUTCOMES, type Outcome } from '../../protocol/outcome';
import { forEachStore, openTestStore } from '../fixtures/stores';
import { makeReceipts } from '../../control/receipts/maker';

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
/** The outcomes a schema-3 database accepts (`caller_error` came with migration 7). */
const SCHEMA_3_OUTCOMES = OUTCOMES.filter((o) => o !== 'caller_error');

t.test('existing outcomes are rolled up by migration 4, exactly as ingest would', async (t) => {
  const dir = t.testdir();
  const rows: { endpoint: string; at: number; outcome: Outcome; latency: number }[] = [];
  for (let i = 0; i < 600; i++) {
    rows.push({
      endpoint: i % 3 === 0 ? 'a' : 'b',
      at: T0 + (i % 7) * 60_000 + i,
      outcome: SCHEMA_3_OUTCOMES[i % SCHEMA_3_OUTCOMES.length]!,
      latency: [0, 1, 2, 3, 49, 50, 51, 999, 60_000, 60_001, 250_000][i % 11]!,
    });
  }

  // A database as a schema-3 build left it.
  const oldPath = join(dir, 'old.db');
  const old = new Database(oldPath);
  for (const m of MIGRATIONS.slice(0, 3)) old.exec(m);
  old.pragma('user_version = 3');
  const insert = old.prepare(
    `INSERT INTO outcomes (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
     VALUES (?, NULL, ?, 'POST', 200, ?, ?, ?, 'gw', ?)`,
  );
  old.transaction(() => {
    for (const r of rows) insert.run(randomUUID(), r.endpoint, r.outcome, r.latency, r.at, r.at);
  })();
  old.close();

  // The same outcomes through today's ingest.
  const fresh = await SqliteStore.open(join(dir, 'fresh.db'), { receiptsCore: makeReceipts });
  t.teardown(() => fresh.close());
  await fresh.outcomes.ingest(
    rows.map((r) => ({
      call_id: randomUUID(),
      key_id: null,
      endpoint_id: r.endpoint,
      method: 'POST',
      status: 200,
      outcome: r.outcome,
      latency_ms: r.latency,
      started_at: new Date(r.at).toISOString(),
      gateway_id: 'gw',
    })),
    T0,
  );

  const migrated = await SqliteStore.open(oldPath, { receiptsCore: makeReceipts });
  t.teardown(() => migrated.close());
  t.equal(await migrated.schemaVersion(), MIGRATIONS.length, 'migrated to the current schema');
  const sort = (w: EndpointWindow[]) => [...w].sort((x, y) => (x.endpoint_id < y.endpoint_id ? -1 : 1));
  const fromMigration = sort(await migrated.rollups.window(T0 - 60_000));
  t.same(fromMigration, sort(await fresh.rollups.window(T0 - 60_000)), 'the backfill equals what ingest builds');
  t.equal(
    fromMigration.reduce((n, w) => n + Object.values(w.counts).reduce((a, b) => a + b, 0), 0),
    600,
    'every outcome counted once',
  );
  const dump = (s: SqliteStore) => s.db.prepare('SELECT * FROM outcome_rollups ORDER BY minute, endpoint_id').all();
  t.same(dump(migrated), dump(fresh), 'row for row, minute by minute');

  // Independent check of one endpoint's histogram.
  const expected = new Array(LATENCY_BOUNDS_MS.length + 1).fill(0);
  for (const r of rows) if (r.endpoint === 'a' && r.outcome !== 'client_error') expected[latencyBucket(r.latency)]++;
  t.same(fromMigration[0]!.latency, expected, 'histogram of endpoint a; client errors excluded');

  const secret = migrated.idSecret;
  t.equal(secret.length, 32, 'a 32-byte id secret is created on open');
  await migrated.close();
  const reopened = await SqliteStore.open(oldPath, { receiptsCore: makeReceipts });
  t.teardown(() => reopened.close());
  t.same(reopened.idSecret, secret, 'and kept across opens');
});

t.test('a minute boundary splits rollup rows; the window starts on a whole minute', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const rec = (at: number) => ({
      call_id: randomUUID(),
      key_id: null,
      endpoint_id: 'e',
      method: 'POST',
      status: 200,
      outcome: 'ok' as const,
      latency_ms: 5,
      started_at: new Date(at).toISOString(),
      gateway_id: 'gw',
    });
    t.equal(await store.outcomes.ingest([rec(T0 - 1), rec(T0), rec(T0 + 59_999), rec(T0 + 60_000)], T0), 4);
    const minutes = await store.rollups.slots(T0 - 60_000, 1, 10);
    t.same(
      minutes.map((m) => [m.slot, m.counts.ok]),
      [
        [0, 1],
        [1, 2],
        [2, 1],
      ],
      'three minutes touched',
    );
    t.same(
      (await store.rollups.slots(T0 - 60_000, 1, 2)).map((m) => [m.slot, m.counts.ok]),
      [
        [0, 1],
        [1, 3],
      ],
      'minutes past the last slot count in it',
    );
    t.equal((await store.rollups.window(T0))[0]!.counts.ok, 3, 'from T0: its minute and the next');
    t.equal((await store.rollups.window(T0 - 1))[0]!.counts.ok, 3, 'a window starting mid-minute leaves that partial minute out');
    t.equal((await store.rollups.window(T0 - 60_000))[0]!.counts.ok, 4);
  });
});
