/**
 * SQLite's migration 25 rebuilds `settled_calls` so its clamp CHECK tests NULL first. A database
 * left at schema 24 keeps every settled call, clamped or not, column for column, and reads the
 * same through the `outcomes` view; the rebuilt table keeps its indexes; the constraint still
 * refuses a clamp that is not one of the four; and the store settles on afterwards.
 */
import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { MIGRATIONS } from '../../control/store/migrations';
import { SqliteStore } from '../../control/store';
import { makeReceipts } from '../../control/receipts/maker';

const T0 = 1_767_225_600_000;
const CLAMPS = [null, 'pool_depleted', 'cap_clamped', 'call_capped', 'batch_capped'];

function schema24(path: string): void {
  const db = new Database(path);
  for (const m of MIGRATIONS.slice(0, 24)) db.exec(m);
  db.pragma('user_version = 24');
  db.exec(`INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
    VALUES (1, 'e', ${T0}, ${CLAMPS.length}, 0, 0, 0, 0, ${CLAMPS.length - 1})`);
  const record = db.prepare(
    `INSERT INTO outcome_records (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
     VALUES (?, 'key_a', 'e', 'POST', 500, 'server_error', 30, ?, 'gw', ?)`,
  );
  const settled = db.prepare(
    `INSERT INTO settled_calls (call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp)
     VALUES (?, 1, 'e', 'key_a', 'server_error', ?, ?, 0, ?, 1100, ?)`,
  );
  CLAMPS.forEach((clamp, i) => {
    const id = `018f0000-0000-7000-8000-00000000000${i}`;
    record.run(id, T0 + i, T0 + 10 + i);
    settled.run(id, T0 + i, T0 + 10 + i, clamp === null ? 1100 : 500, clamp);
  });
  db.close();
}

const indexes = (db: Database.Database) =>
  db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'settled_calls' ORDER BY name`).all();

t.test('migration 25 keeps every settled call and tightens nothing', async (t) => {
  const path = join(t.testdir(), 'control.db');
  schema24(path);
  const before = new Database(path, { readonly: true });
  const rowsBefore = before.prepare(`SELECT * FROM settled_calls ORDER BY call_id`).all();
  const viewBefore = before.prepare(`SELECT * FROM outcomes ORDER BY call_id`).all();
  const indexesBefore = indexes(before);
  before.close();
  t.equal(rowsBefore.length, CLAMPS.length);

  const store = await SqliteStore.open(path, { receiptsCore: makeReceipts });
  t.teardown(() => store.close());
  t.equal(await store.schemaVersion(), MIGRATIONS.length);
  const db = store.db;
  t.same(db.prepare(`SELECT * FROM settled_calls ORDER BY call_id`).all(), rowsBefore, 'every settled call, column for column');
  t.same(db.prepare(`SELECT * FROM outcomes ORDER BY call_id`).all(), viewBefore, 'the outcomes view reads the same');
  t.same(indexes(db), indexesBefore, 'the same indexes');
  const check = db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'settled_calls'`).pluck().get() as string;
  t.match(check, /clamp IS NULL OR clamp IN \('pool_depleted', 'cap_clamped', 'call_capped', 'batch_capped'\)/);

  const insert = db.prepare(
    `INSERT INTO settled_calls (call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp)
     VALUES (?, 1, 'e', NULL, 'ok', ${T0}, ${T0}, 0, 0, 0, ?)`,
  );
  t.throws(() => insert.run('018f0000-0000-7000-8000-0000000000aa', 'bogus'), /CHECK constraint failed/, 'an unknown clamp is refused');
  t.throws(() => insert.run('018f0000-0000-7000-8000-0000000000ab', ''), /CHECK constraint failed/, 'an empty clamp is refused');
  t.equal(insert.run('018f0000-0000-7000-8000-0000000000ac', null).changes, 1, 'no clamp is accepted');
  t.equal(insert.run('018f0000-0000-7000-8000-0000000000ad', 'batch_capped').changes, 1, 'a known clamp is accepted');
  t.same(db.pragma('foreign_key_check'), [], 'no dangling reference');
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok');
});
