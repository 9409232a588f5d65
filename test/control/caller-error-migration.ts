/**
 * Migration 7 rebuilds `outcomes` to admit the `caller_error` outcome (SQLite cannot widen a
 * CHECK constraint in place) and adds its rollup column. A database left by a schema-6 build,
 * with settled and unsettled outcomes, keeps every row and every settlement field, its
 * indexes, and accepts `caller_error` afterwards; caller errors then stay out of the
 * failure-rate denominator and the latency histogram.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../control/store/migrations';
import { SqliteStore } from '../../control/store';
import { makeReceipts } from '../../control/receipts/maker';

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

t.test('a schema-6 database migrates to caller_error without losing a row or a field', async (t) => {
  const path = join(t.testdir(), 'old.db');
  const old = new Database(path);
  for (const m of MIGRATIONS.slice(0, 6)) old.exec(m);
  old.pragma('user_version = 6');
  old
    .prepare(
      `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls) VALUES (1, 'e', ?, 2, 100, 0, 900, 1100, 1)`,
    )
    .run(T0);
  const insert = old.prepare(
    `INSERT INTO outcomes (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at, settled_batch, premium, refund, refund_owed, clamp)
     VALUES (?, ?, 'e', 'POST', ?, ?, ?, ?, 'gw', ?, ?, ?, ?, ?, ?)`,
  );
  const rows = [
    [randomUUID(), 'key_a', 200, 'ok', 12, T0, T0 + 5, 1, 100, 0, 0, null],
    [randomUUID(), 'key_a', 500, 'server_error', 30, T0 + 1, T0 + 6, 1, 0, 900, 1100, 'pool_depleted'],
    [randomUUID(), null, 404, 'client_error', 8, T0 + 2, T0 + 7, null, null, null, null, null],
  ] as const;
  for (const r of rows) insert.run(...r);
  const before = old.prepare('SELECT * FROM outcomes ORDER BY call_id').all();
  old.close();

  const store = await SqliteStore.open(path, { receiptsCore: makeReceipts });
  t.teardown(() => store.close());
  t.equal(await store.schemaVersion(), MIGRATIONS.length, 'migrated to the current schema');
  t.same(store.db.prepare('SELECT * FROM outcomes ORDER BY call_id').all(), before, 'every row and field kept, in the same columns');
  const indexes = store.db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
    .pluck()
    .all() as string[];
  // Migration 19 moved the rows (and these indexes) to the outcome records and the settled calls.
  for (const name of ['outcome_records_by_time', 'settled_calls_by_batch', 'settled_calls_clamped'])
    t.ok(indexes.includes(name), `index ${name} built`);
  t.notOk(indexes.includes('outcomes_by_endpoint_time'), 'rebuilt by 7, then dropped by migration 13');
  t.same(
    store.db.prepare('SELECT call_id FROM unsettled_outcomes').pluck().all(),
    [rows[2][0]],
    'the unsettled call, and only it, waits in the queue',
  );

  const caller = (status: number) => ({
    call_id: randomUUID(),
    key_id: 'key_a',
    endpoint_id: 'e',
    method: 'POST',
    status,
    outcome: 'caller_error' as const,
    latency_ms: 10_000,
    started_at: new Date(T0 + 60_000).toISOString(),
    gateway_id: 'gw',
  });
  t.equal(await store.outcomes.ingest([caller(408), caller(413), caller(499)], T0 + 60_000), 3, 'caller_error is accepted now');
  const [w] = await store.rollups.window(T0 + 60_000);
  t.equal(w?.counts.caller_error, 3, 'counted in its own rollup column');
  t.equal(
    w?.latency.reduce((a, b) => a + b, 0),
    0,
    'and kept out of the latency histogram',
  );
});
