/**
 * `copySqliteToPostgres` (control/store/pg/copy.ts) against a real PostgreSQL: a populated
 * SQLite install copied table by table, every row equal on both sides, `keys.seq` in rowid
 * order, the identity sequences moved past the copied ids (and past SQLite's AUTOINCREMENT
 * counters), the data dir untouched; a target holding svc tables refused and left alone; a
 * copy that fails (a value PostgreSQL refuses or would rewrite, a table PostgreSQL's schema
 * lacks, an old source) leaves the target as it found it.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'pg';
import { SqliteStore } from '../../control/store';
import { MIGRATIONS } from '../../control/store/migrations';
import { COPY_BATCH_ROWS, FILLED_FROM, StoreCopyError, copySqliteToPostgres } from '../../control/store/pg/copy';
import { migratePg, pgSchemaVersion } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { populateStore } from '../fixtures/populated-store';
import { makeReceipts } from '../../control/receipts/maker';

type Row = Record<string, unknown>;

/** A value as both sides compare it: blobs as hex (numbers are numbers on both: PG_TYPES). */
const normal = (value: unknown): unknown => (Buffer.isBuffer(value) ? `hex:${value.toString('hex')}` : value);
/** Rows as sorted JSON lines, so the two sides compare whatever order each returns them in. */
const lines = (rows: Row[]): string[] =>
  rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, normal(v)])))).sort();

const sqliteTables = (db: Database.Database): string[] =>
  db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).pluck().all() as string[];

/** Every file of `dir` but SQLite's `-wal` and `-shm`, with the SHA-256 of its bytes. */
const files = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readdirSync(dir)
      .filter((name) => !/-(wal|shm)$/.test(name))
      .sort()
      .map((name) => [
        name,
        createHash('sha256')
          .update(readFileSync(join(dir, name)))
          .digest('hex'),
      ]),
  );

if (!skipWithoutPostgres(t)) {
  const pool = (t: Test, url: string): Pool => {
    const p = new Pool({ connectionString: url, types: PG_TYPES, max: 2 });
    t.teardown(() => p.end());
    return p;
  };
  const pgTables = async (p: Pool): Promise<string[]> =>
    (
      await p.query<{ name: string }>(
        `SELECT relname AS name FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY relname`,
      )
    ).rows.map((r) => r.name);

  /** A data dir with a populated SQLite install; the store closed. */
  const install = async (t: Test, edit?: (db: Database.Database) => void, outcomes = 300): Promise<{ dir: string; path: string }> => {
    const dir = t.testdir();
    const path = join(dir, 'control.db');
    const store = await SqliteStore.open(path, { receiptsCore: makeReceipts });
    await populateStore(store, { outcomes, batchCap: Math.ceil(outcomes / 10) });
    edit?.(store.db);
    await store.close();
    return { dir, path };
  };

  t.test('a populated install is copied: every table, row for row', async (t) => {
    const { dir, path } = await install(
      t,
      (db) => {
        // The newest audit row gone: SQLite's AUTOINCREMENT never gives its id again, nor may PostgreSQL.
        db.prepare(`DELETE FROM audit_log WHERE id = (SELECT max(id) FROM audit_log)`).run();
      },
      // More outcomes than one INSERT takes.
      2 * COPY_BATCH_ROWS + 17,
    );
    const before = files(dir);
    const url = await createDatabase(t);
    const result = await copySqliteToPostgres(path, url);

    const source = new Database(path, { readonly: true });
    t.teardown(() => source.close());
    const target = pool(t, url);
    const tables = sqliteTables(source);
    t.same([...result.tables.map((x) => x.name)].sort(), tables, 'every table of the SQLite store, each once');
    t.same(
      (await pgTables(target)).sort(),
      [
        ...tables,
        'svc_schema_migrations',
        'controls',
        'settler_lease',
        'control_tokens',
        'shared_snapshots',
        'shared_snapshot_lines',
      ].sort(),
      'the same tables in PostgreSQL, and the cluster tables',
    );
    t.equal(await pgSchemaVersion(target), PG_MIGRATIONS.length, 'migrated to this build');

    const fks = (
      await target.query<{ child: string; parent: string }>(
        `SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid WHERE k.contype = 'f'`,
      )
    ).rows;
    const position = (name: string) => result.tables.findIndex((x) => x.name === name);
    t.ok(fks.length > 5);
    t.same(
      fks.filter((fk) => position(fk.parent) > position(fk.child)),
      [],
      'every table copied after the tables it references',
    );

    let total = 0;
    for (const table of tables) {
      const columns = (
        await target.query<{ name: string }>(
          `SELECT attname AS name FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
          [table],
        )
      ).rows.map((c) => c.name);
      const filled = FILLED_FROM[table] ?? {};
      const select = columns.map((c) => (c in filled ? `${filled[c]} AS "${c}"` : `"${c}"`)).join(', ');
      const lite = source.prepare(`SELECT ${select} FROM "${table}"`).all() as Row[];
      const pg = (await target.query<Row>(`SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM "${table}"`)).rows;
      t.ok(lite.length > 0, `${table}: the install has rows in it`);
      t.same(lines(pg), lines(lite), `${table}: the same ${lite.length} rows, every column`);
      t.equal(result.tables.find((x) => x.name === table)?.rows, lite.length, `${table}: counted`);
      total += lite.length;
    }
    t.equal(result.rows, total);

    const rowid = source.prepare(`SELECT id, rowid FROM keys ORDER BY rowid`).all() as { id: string; rowid: number }[];
    t.same((await target.query(`SELECT id, seq AS rowid FROM keys ORDER BY seq`)).rows, rowid, "keys.seq is SQLite's rowid order");

    // Identity sequences: the next id follows the copied ones.
    const counters = new Map(
      (source.prepare(`SELECT name, seq FROM sqlite_sequence`).all() as { name: string; seq: number }[]).map((r) => [r.name, r.seq]),
    );
    const maxId = (table: string) => source.prepare(`SELECT max(id) FROM "${table}"`).pluck().get() as number;
    t.ok(counters.get('audit_log')! > maxId('audit_log'), 'the source gave an id it no longer holds');
    const next = async (sql: string, params: unknown[] = []) => (await target.query<{ id: number }>(sql, params)).rows[0]!.id;
    t.equal(
      await next(`INSERT INTO audit_log (at, actor, action) VALUES (1, 'x', 'y') RETURNING id`),
      counters.get('audit_log')! + 1,
      'audit_log: past every id SQLite ever gave',
    );
    t.equal(
      await next(`INSERT INTO changelog (at, kind, text, author) VALUES (1, 'notice', 'x', 'y') RETURNING id`),
      maxId('changelog') + 1,
      'changelog',
    );
    t.equal(
      await next(`INSERT INTO ledger_transfers (at, kind, actor) VALUES (1, 'fund', 'x') RETURNING id`),
      maxId('ledger_transfers') + 1,
      'ledger_transfers',
    );
    t.equal(
      await next(
        `INSERT INTO application_deliveries (application_id, key_id, notifier, attempt, at, outcome)
         VALUES ('app_1', 'key_app', 'operator', 3, 1, 'shown_to_operator') RETURNING id`,
      ),
      maxId('application_deliveries') + 1,
      'application_deliveries',
    );
    t.equal(
      await next(
        `INSERT INTO keys (id, prefix, status, created_at, created_by) VALUES ('key_new', 'p', 'active', 1, 'x') RETURNING seq AS id`,
      ),
      rowid[rowid.length - 1]!.rowid + 1,
      'keys.seq',
    );

    t.same(files(dir), before, 'nothing in the data dir changed (tokens, signing key, backfill record, the database)');
  });

  t.test('the migration seeded rows are replaced by the source’s, not added to', async (t) => {
    const { path } = await install(t, (db) => {
      db.prepare(`UPDATE flags SET value = 1, updated_at = 5, updated_by = 'op' WHERE name = 'maintenance_mode'`).run();
    });
    const url = await createDatabase(t);
    await copySqliteToPostgres(path, url);
    const target = pool(t, url);
    t.same((await target.query(`SELECT name, value, updated_at, updated_by FROM flags ORDER BY name`)).rows, [
      { name: 'beta_gate_enabled', value: 1, updated_at: Date.UTC(2030, 0, 1, 12) + 30, updated_by: 'tester' },
      { name: 'maintenance_mode', value: 1, updated_at: 5, updated_by: 'op' },
    ]);
    t.same((await target.query(`SELECT name FROM meta ORDER BY name`)).rows, [{ name: 'receipts_backfilled' }, { name: 'state_version' }]);
    t.equal(
      (await target.query(`SELECT count(*) AS n FROM account_balances WHERE account IN ('external', 'pool', 'treasury')`)).rows[0].n,
      3,
    );
  });

  t.test('a target that holds svc tables is refused and left as it was', async (t) => {
    const { path } = await install(t);
    const migrated = await createDatabase(t);
    const m = pool(t, migrated);
    await migratePg(m);
    await m.query(`UPDATE meta SET value = 42 WHERE name = 'state_version'`);
    await t.rejects(copySqliteToPostgres(path, migrated), {
      name: 'StoreCopyError',
      message: /^the target database already holds svc tables \(.*meta.*svc_schema_migrations.*\); copy into an empty database$/,
    });
    t.same((await m.query(`SELECT value FROM meta`)).rows, [{ value: 42 }], 'its rows untouched');

    for (const table of ['svc_schema_migrations', 'outcomes']) {
      const url = await createDatabase(t);
      const p = pool(t, url);
      await p.query(`CREATE TABLE ${table} (x integer)`);
      await t.rejects(copySqliteToPostgres(path, url), { message: new RegExp(`holds svc tables \\(${table}\\)`) }, `${table} alone`);
      t.same(await pgTables(p), [table], 'nothing added, nothing dropped');
    }
  });

  t.test('tables of other applications in the target are no obstacle, and stay', async (t) => {
    const { path } = await install(t);
    const url = await createDatabase(t);
    const p = pool(t, url);
    await p.query(`CREATE TABLE notes (x text); INSERT INTO notes VALUES ('kept')`);
    await copySqliteToPostgres(path, url);
    t.same((await p.query(`SELECT x FROM notes`)).rows, [{ x: 'kept' }]);
  });

  t.test('a copy that fails leaves the target as it found it', async (t) => {
    const cases: [what: string, edit: (db: Database.Database) => void, error: RegExp][] = [
      [
        'a value PostgreSQL refuses (a NUL character in text), after most tables are copied',
        (db) => db.prepare(`UPDATE receipts SET sig = sig || char(0) WHERE batch = 1`).run(),
        /invalid byte sequence for encoding "UTF8": 0x00/,
      ],
      [
        'a call id in capitals (stored so before ingest lowercased ids; PostgreSQL’s uuid would rewrite it)',
        (db) => db.exec(`UPDATE outcome_records SET call_id = upper(call_id) WHERE call_id = (SELECT max(call_id) FROM outcome_records)`),
        /^table outcome_records: call_id "[0-9A-F-]{36}" is not a lowercase UUID, so PostgreSQL would not store it as it is$/,
      ],
      [
        'a table PostgreSQL’s schema does not have',
        (db) => db.exec(`CREATE TABLE later_feature (id INTEGER PRIMARY KEY)`),
        /^SQLite's store and PostgreSQL's schema have different tables \(only in SQLite: later_feature\)$/,
      ],
      [
        'a column PostgreSQL’s schema does not have',
        (db) => db.exec(`ALTER TABLE gateways ADD COLUMN region TEXT`),
        /^table gateways has other columns in SQLite \(.*, region\) than in PostgreSQL \(.*engine\)$/,
      ],
    ];
    for (const [what, edit, error] of cases) {
      const { path } = await install(t, edit);
      const url = await createDatabase(t);
      const p = pool(t, url);
      await p.query(`CREATE TABLE notes (x text)`);
      await t.rejects(copySqliteToPostgres(path, url), { message: error }, what);
      t.same(await pgTables(p), ['notes'], `${what}: the tables the copy created are gone, the others stay`);
    }
  });

  t.test('a copy interrupted (Ctrl-C) stops and leaves the target as it found it', async (t) => {
    const { path } = await install(t);
    const url = await createDatabase(t);
    const interrupted = new AbortController();
    interrupted.abort();
    await t.rejects(copySqliteToPostgres(path, url, { signal: interrupted.signal }), { name: 'StoreCopyError', message: 'interrupted' });
    t.same(await pgTables(pool(t, url)), []);
  });

  t.test('a source at another schema version is refused before the target is touched', async (t) => {
    const { path } = await install(t);
    const url = await createDatabase(t);
    const db = new Database(path);
    db.pragma(`user_version = ${MIGRATIONS.length - 1}`);
    db.close();
    await t.rejects(copySqliteToPostgres(path, url), {
      message: new RegExp(`is at schema version ${MIGRATIONS.length - 1}, this build's is ${MIGRATIONS.length}: start control`),
    });
    t.same(await pgTables(pool(t, url)), []);
    await t.rejects(copySqliteToPostgres(join(path, '..', 'missing.db'), url), StoreCopyError);
  });
}
