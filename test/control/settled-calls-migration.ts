/**
 * SQLite's migration 19 and PostgreSQL's 9 split `outcomes` into the outcome records, the
 * settler's queue and the settled calls, and make `outcomes` their view. A database left by the
 * schema before, holding settled calls (one clamped) and unsettled ones, reads the same through
 * the view afterwards, row for row; the unsettled calls and only they wait in the queue; the
 * settled ones keep their batch and amounts; and the store settles the queue where it left off.
 */
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { Pool } from 'pg';
import { MIGRATIONS } from '../../control/store/migrations';
import { migratePg } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { newInstall, openInstall, rawQuery, sqlitePath, type Install } from '../fixtures/store-sql';
import { forEachStore, type StoreKind } from '../fixtures/stores';
import { T0, fund, settleAll } from '../fixtures/ledger';

const BATCH = `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
  VALUES (1, 'e', ${T0}, 2, 100, 0, 900, 1100, 1)`;
/** Call ids, as UUIDs (PostgreSQL's migration 10 refuses anything else). */
const [C1, C2, C3, C4] = [1, 2, 3, 4].map((n) => `018f0000-0000-7000-8000-00000000000${n}`);
const ROW = `INSERT INTO outcomes (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at,
  settled_batch, premium, refund, refund_owed, clamp)`;
const ROWS = [
  `${ROW} VALUES ('${C1}', 'key_a', 'e', 'POST', 200, 'ok', 12, ${T0}, 'gw', ${T0 + 5}, 1, 100, 0, 0, NULL)`,
  `${ROW} VALUES ('${C2}', 'key_a', 'e', 'POST', 500, 'server_error', 30, ${T0 + 1}, 'gw', ${T0 + 6}, 1, 0, 900, 1100, 'pool_depleted')`,
  `${ROW} VALUES ('${C3}', NULL, 'e', 'GET', 404, 'client_error', 8, ${T0 + 2}, 'gw', ${T0 + 7}, NULL, NULL, NULL, NULL, NULL)`,
  `${ROW} VALUES ('${C4}', 'key_b', 'e', 'GET', 200, 'ok', 9, ${T0 + 3}, 'gw', ${T0 + 8}, NULL, NULL, NULL, NULL, NULL)`,
];
const ALL = `SELECT * FROM outcomes ORDER BY call_id`;

/** An install whose database is at the schema before the split, holding `ROWS`. */
async function oldInstall(t: Test, kind: StoreKind): Promise<Install> {
  const at = await newInstall(t, kind);
  if (at.url === null) {
    const db = new Database(sqlitePath(at));
    for (const m of MIGRATIONS.slice(0, 18)) db.exec(m);
    db.pragma('user_version = 18');
    for (const sql of [BATCH, ...ROWS]) db.exec(sql);
    db.close();
    return at;
  }
  const pool = new Pool({ connectionString: at.url, types: PG_TYPES, max: 1 });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 8));
    for (const sql of [BATCH, ...ROWS]) await pool.query(sql);
  } finally {
    await pool.end();
  }
  return at;
}

t.test('the outcomes of the schema before read the same, the unsettled ones are queued, and settle', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await oldInstall(t, kind);
    const before = await rawQuery(at, ALL);
    t.equal(before.length, 4);
    const store = await openInstall(t, at, { receipts: false });
    t.same(await rawQuery(at, ALL), before, 'every row and field, through the view');
    t.same(await rawQuery(at, `SELECT call_id FROM unsettled_outcomes ORDER BY call_id`), [[C3], [C4]], 'the unsettled calls are queued');
    t.same(
      await rawQuery(at, `SELECT call_id, batch_id, premium, refund, refund_owed, clamp FROM settled_calls ORDER BY call_id`),
      [
        [C1, 1, 100, 0, 0, null],
        [C2, 1, 0, 900, 1100, 'pool_depleted'],
      ],
      'the settled calls keep their batch and amounts',
    );
    t.same(await store.settlement.backlog(), { count: 2, oldest_received_at: T0 + 7 });
    await fund(store, 10);
    await settleAll(store);
    t.equal((await store.settlement.backlog()).count, 0, 'the queue settles');
    t.same(await rawQuery(at, `SELECT call_id, settled_batch FROM outcomes WHERE call_id IN ('${C3}', '${C4}') ORDER BY call_id`), [
      [C3, 2],
      [C4, 2],
    ]);
  });
});
