/**
 * PostgreSQL's migration 10 turns every call id column into `uuid`: a database at version 9
 * reads the same afterwards, row for row, through the `outcomes` view and in every table; one
 * holding an id that is not a lowercase UUID (hashed into a signed receipt as it is) is refused
 * and left at version 9, unchanged.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { Pool } from 'pg';
import { migratePg, pgSchemaVersion } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';

const T0 = Date.UTC(2030, 0, 1, 12);
const [SETTLED, QUEUED] = ['018f0000-0000-7000-8000-00000000000a', '018f0000-0000-7000-8000-00000000000b'];
const CALL_ID_TABLES = ['outcome_records', 'unsettled_outcomes', 'settled_calls', 'ledger_transfers'];

/** A database at version 9 holding one settled call (with its refund transfer) and one queued. */
async function atVersion9(t: Test, ids = [SETTLED, QUEUED]): Promise<Pool> {
  const pool = new Pool({ connectionString: await createDatabase(t), types: PG_TYPES, max: 1 });
  t.teardown(() => pool.end());
  await migratePg(pool, PG_MIGRATIONS.slice(0, 9));
  const [settled, queued] = ids;
  for (const sql of [
    `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
     VALUES (1, 'e', ${T0}, 1, 0, 0, 900, 900, 0)`,
    `INSERT INTO outcome_records (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
     VALUES ('${settled}', 'key_a', 'e', 'POST', 500, 'server_error', 30, ${T0}, 'gw', ${T0 + 5}),
            ('${queued}', NULL, 'e', 'GET', 200, 'ok', 8, ${T0 + 1}, 'gw', ${T0 + 6})`,
    `INSERT INTO settled_calls (call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at, premium, refund, refund_owed, clamp)
     VALUES ('${settled}', 1, 'e', 'key_a', 'server_error', ${T0}, ${T0 + 5}, 0, 900, 900, NULL)`,
    `INSERT INTO unsettled_outcomes (endpoint_id, received_at, call_id, key_id, outcome, started_at)
     VALUES ('e', ${T0 + 6}, '${queued}', NULL, 'ok', ${T0 + 1})`,
    `INSERT INTO ledger_transfers (at, kind, call_id, batch_id, reference, actor)
     VALUES (${T0}, 'fund', NULL, NULL, NULL, 'test'), (${T0 + 10}, 'refund', '${settled}', 1, NULL, 'settler')`,
  ])
    await pool.query(sql);
  return pool;
}

/** Every row of every table holding call ids, and of the `outcomes` view, as JSON lines. */
async function contents(pool: Pool): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of [...CALL_ID_TABLES, 'outcomes']) {
    const { rows } = await pool.query(`SELECT * FROM ${table}`);
    out[table] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}

/**
 * `after`'s rows with only the columns `before`'s rows of the same table have: what later
 * migrations added (prepaid billing's `reserved` and `instance`, null on every row here) is
 * not what migration 10 is checked for.
 */
function columnsOf(after: Record<string, string[]>, before: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [table, rows] of Object.entries(after)) {
    const first = before[table]?.[0];
    const keep = first === undefined ? null : Object.keys(JSON.parse(first) as object);
    out[table] = rows
      .map((r) =>
        keep === null ? r : JSON.stringify(Object.fromEntries(keep.map((k) => [k, (JSON.parse(r) as Record<string, unknown>)[k]]))),
      )
      .sort();
  }
  return out;
}

const callIdTypes = async (pool: Pool): Promise<string[]> =>
  (
    await pool.query<{ type: string }>(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
       WHERE attrelid = ANY ($1::regclass[]) AND attname = 'call_id' ORDER BY attrelid::regclass::text`,
      [CALL_ID_TABLES],
    )
  ).rows.map((r) => r.type);

if (!skipWithoutPostgres(t)) {
  t.test('call ids become uuid, and every row reads as it did', async (t) => {
    const pool = await atVersion9(t);
    const before = await contents(pool);
    t.same(await callIdTypes(pool), ['text', 'text', 'text', 'text']);
    t.same(await migratePg(pool), { from: 9, to: PG_MIGRATIONS.length });
    t.same(await callIdTypes(pool), ['uuid', 'uuid', 'uuid', 'uuid'], 'every call id column');
    t.same(columnsOf(await contents(pool), before), before, 'every table and the outcomes view, row for row');
    const { rows } = await pool.query(`SELECT settled_batch, refund FROM outcomes WHERE call_id = $1`, [SETTLED.toUpperCase()]);
    t.same(rows, [{ settled_batch: 1, refund: 900 }], 'an id in capitals finds its call');
  });

  t.test('an id that is not a lowercase UUID fails the migration and leaves the database at 9', async (t) => {
    const cases: [string, string][] = [
      [SETTLED.toUpperCase(), QUEUED],
      ['c1', QUEUED],
    ];
    for (const [bad, queued] of cases) {
      const pool = await atVersion9(t, [bad, queued]);
      const before = await contents(pool);
      await t.rejects(migratePg(pool), /a stored call id is not a lowercase UUID/, bad);
      t.equal(await pgSchemaVersion(pool), 9, `${bad}: still at 9`);
      t.same(await callIdTypes(pool), ['text', 'text', 'text', 'text'], `${bad}: no column changed`);
      t.same(await contents(pool), before, `${bad}: no row changed`);
    }
  });
}
