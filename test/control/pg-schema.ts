/**
 * PostgreSQL's schema (control/store/pg/) against SQLite's, as each dialect's real migrations
 * build them: the same tables, columns, types, nullability, defaults, primary and foreign keys,
 * CHECKs and indexes (partial ones with the same predicates), the same seed rows, and the same
 * statements refused. And the PostgreSQL migrator: idempotent, one migration at a time under
 * its advisory lock when processes race, one transaction per migration, and a database from a
 * newer build refused with SQLite's wording.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Pool } from 'pg';
import { openDatabase, type Db } from '../../control/store/db';
import { StoreOpenError } from '../../control/store/errors';
import { MIGRATIONS } from '../../control/store/migrations';
import { migratePg, pgSchemaVersion } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { pgSchema, sqliteSchema } from '../fixtures/schema';

/** Columns PostgreSQL has beyond SQLite's, each explained in pg/migrations/001-initial.ts. */
const EXTRA_COLUMNS: Record<string, string[]> = { keys: ['seq'] };
const EXTRA_INDEXES = ['keys_by_seq'];
/** The migrations table, then the tables of several controls on one database (pg/migrations/003-cluster.ts, 008-shared-snapshots.ts). */
const EXTRA_TABLES = ['svc_schema_migrations', 'controls', 'settler_lease', 'control_tokens', 'shared_snapshots', 'shared_snapshot_lines'];
/** Foreign keys SQLite checks and PostgreSQL leaves to the store and `ledger verify` (pg migrations 2 and 9 say why). */
const UNCHECKED_FOREIGN_KEYS = ['settled_calls(batch_id) → settlement_batches(id)'];

/** Call ids are `uuid` on PostgreSQL, text on SQLite (pg migration 10 says why). */
const UUID_COLUMNS = ['outcome_records.call_id', 'unsettled_outcomes.call_id', 'settled_calls.call_id', 'ledger_transfers.call_id'];

const [C1, C2] = ['018f0000-0000-7000-8000-000000000001', '018f0000-0000-7000-8000-000000000002'];

const sorted = (list: readonly string[]) => [...list].sort();

if (!skipWithoutPostgres(t)) {
  /** A pool on a fresh database, ended in `t`'s teardown. */
  const freshPool = async (t: Test, url?: string, options?: string): Promise<Pool> => {
    const pool = new Pool({ connectionString: url ?? (await createDatabase(t)), types: PG_TYPES, max: 2, options });
    t.teardown(() => pool.end());
    return pool;
  };

  const sqliteDb = (t: Test): Db => {
    const db = openDatabase(':memory:');
    t.teardown(() => db.close());
    return db;
  };

  t.test('PostgreSQL migrated has the schema SQLite migrated has', async (t) => {
    const pool = await freshPool(t);
    t.same(await migratePg(pool), { from: 0, to: PG_MIGRATIONS.length }, 'a new database is migrated from 0');
    const lite = sqliteSchema(sqliteDb(t));
    const pg = await pgSchema(pool);

    t.same(sorted(pg.tables), sorted([...lite.tables, ...EXTRA_TABLES]), 'the same tables, the migrations table and the cluster tables');
    for (const table of lite.tables) {
      const extra = EXTRA_COLUMNS[table] ?? [];
      const columns = (pg.columns[table] ?? []).map((c) =>
        UUID_COLUMNS.includes(`${table}.${c.name}`) && c.type === 'uuid' ? { ...c, type: 'text' } : c,
      );
      // PostgreSQL's own columns (keys.seq) stand where they were added; columns added later follow them.
      const shared = columns.filter((c) => !extra.includes(c.name));
      t.same(shared, lite.columns[table], `${table}: the same columns in the same order (names, types, NOT NULL, defaults)`);
      t.same(
        columns.filter((c) => extra.includes(c.name)).map((c) => c.name),
        extra,
        `${table}: and the extra columns`,
      );
      t.same(pg.primaryKeys[table], lite.primaryKeys[table], `${table}: the same primary key`);
      t.equal(pg.checks[table] ?? 0, lite.checks[table], `${table}: as many CHECK constraints`);
    }
    t.same(
      Object.entries(pg.columns).flatMap(([table, columns]) => columns.filter((c) => c.type === 'uuid').map((c) => `${table}.${c.name}`)),
      UUID_COLUMNS.concat('outcomes.call_id').sort(),
      'call ids are uuid, and nothing else is',
    );
    for (const [name, index] of Object.entries(lite.indexes))
      t.same(pg.indexes[name], index, `index ${name}: same table, columns, uniqueness, predicate`);
    t.same(sorted(Object.keys(pg.indexes)), sorted([...Object.keys(lite.indexes), ...EXTRA_INDEXES]), 'no other index');
    t.same(sorted(pg.uniques), sorted(lite.uniques), 'the same UNIQUE constraints');
    t.same(
      sorted(pg.foreignKeys.filter((fk) => !EXTRA_TABLES.some((table) => fk.startsWith(`${table}(`)))),
      sorted(lite.foreignKeys.filter((fk) => !UNCHECKED_FOREIGN_KEYS.includes(fk))),
      'the same foreign keys, but those left unchecked',
    );
    t.ok(
      UNCHECKED_FOREIGN_KEYS.every((fk) => lite.foreignKeys.includes(fk)),
      'each one left unchecked is one SQLite has',
    );
    const notC = Object.entries(pg.collations).filter(
      ([column, collation]) => column.split('.')[0] !== EXTRA_TABLES[0] && collation !== 'C',
    );
    t.same(notC, [], 'every text column of the store compares bytes, as SQLite does (COLLATE "C")');
    const views = (await pool.query<{ name: string }>(`SELECT viewname AS name FROM pg_views WHERE schemaname = current_schema()`)).rows;
    const liteDb = sqliteDb(t);
    t.same(
      views.map((v) => v.name),
      liteDb.prepare(`SELECT name FROM sqlite_master WHERE type = 'view'`).pluck().all(),
      'the same views',
    );
    t.same(
      (pg.columns['outcomes'] ?? []).map((c) => c.name),
      liteDb.prepare(`SELECT name FROM pragma_table_info('outcomes')`).pluck().all(),
      'the outcomes view: the same columns in the same order',
    );
  });

  t.test('the same seed rows', async (t) => {
    const pool = await freshPool(t);
    await migratePg(pool);
    const db = sqliteDb(t);
    const seeds = [
      `SELECT name, value FROM meta ORDER BY name`,
      `SELECT name, value, updated_by, note FROM flags ORDER BY name`,
      `SELECT account, balance FROM account_balances ORDER BY account`,
      `SELECT name, scopes, expires_at, revoked_at, last_used_at FROM operators ORDER BY name`,
    ];
    for (const sql of seeds) t.same((await pool.query(sql)).rows, db.prepare(sql).all(), sql);
    const [flag] = (await pool.query(`SELECT updated_at FROM flags LIMIT 1`)).rows as { updated_at: number }[];
    t.ok(Math.abs(flag!.updated_at - Date.now()) < 600_000, 'flags are seeded with the migration time in ms');
    const [root] = (await pool.query(`SELECT created_at FROM operators WHERE name = 'root'`)).rows as { created_at: number }[];
    t.ok(Math.abs(root!.created_at - Date.now()) < 600_000, 'so is root, the bootstrap admin token’s operator');
  });

  t.test('the same statements are refused, and accepted', async (t) => {
    const pool = await freshPool(t);
    await migratePg(pool);
    const db = sqliteDb(t);
    const outcome = (id: string, outcome: string) =>
      `INSERT INTO outcome_records (call_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
       VALUES ('${id}', 'e', 'GET', 200, '${outcome}', 1, 0, 'g', 0)`;
    const cases: [sql: string, accepted: boolean][] = [
      [`UPDATE account_balances SET balance = -1 WHERE account = 'pool'`, false],
      [`UPDATE account_balances SET balance = -1 WHERE account = 'treasury'`, true],
      [`INSERT INTO flags (name, value, updated_at, updated_by) VALUES ('f', 2, 0, 'x')`, false],
      [`INSERT INTO state_changes (version, kind, entity) VALUES (2, 'bogus', '*')`, false],
      [outcome(C1, 'caller_error'), true],
      [outcome(C2, 'bogus'), false],
      [outcome(C1, 'ok'), false],
      [
        `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
        VALUES (1, 'e', 0, 1, 0, 0, 5, 4, 0)`,
        false,
      ],
      [`INSERT INTO key_secrets (hash, key_id, prefix, created_at) VALUES ('${'a'.repeat(64)}', 'no_such_key', 'p', 0)`, false],
      [`INSERT INTO ledger_postings (transfer_id, account, amount) VALUES (1, 'bogus', 5)`, false],
      [`INSERT INTO gateways (id, first_seen, last_seen, share) VALUES ('g', 0, 0, 1.5)`, false],
      [
        `INSERT INTO applications (id, received_at, source, status, building, contact_name, social_url, messaging_handle,
          applicant_type, feedback_opt_in, content_hash, last_submitted_at)
        VALUES ('a', 0, 'form', 'approved', 'b', 'c', 's', 'm', 'ai_agent', 0, '${'0'.repeat(64)}', 0)`,
        false,
      ],
    ];
    for (const [sql, accepted] of cases) {
      const lite = (() => {
        try {
          db.exec(sql);
          return true;
        } catch {
          return false;
        }
      })();
      const pg = await pool.query(sql).then(
        () => true,
        () => false,
      );
      t.equal(lite, accepted, `SQLite ${accepted ? 'accepts' : 'refuses'}: ${sql.split('\n')[0]}`);
      t.equal(pg, accepted, `PostgreSQL ${accepted ? 'accepts' : 'refuses'}: ${sql.split('\n')[0]}`);
    }
  });

  t.test('BIGINT reads as a number, and one past the safe integers throws; BYTEA reads as a Buffer', async (t) => {
    const pool = await freshPool(t);
    await migratePg(pool);
    const { rows } = await pool.query(`SELECT count(*) AS n, max(value) AS v FROM meta`);
    t.same(rows, [{ n: 1, v: 1 }]);
    await t.rejects(pool.query(`SELECT 9007199254740992::bigint AS v`), RangeError);
    const secret = Buffer.alloc(32, 7);
    await pool.query(`INSERT INTO public_secret (id, secret) VALUES (1, $1)`, [secret]);
    const read = (await pool.query(`SELECT secret FROM public_secret`)).rows[0].secret as Buffer;
    t.ok(Buffer.isBuffer(read) && read.equals(secret));
    await t.rejects(pool.query(`INSERT INTO public_secret (id, secret) VALUES (1, $1)`, [Buffer.alloc(31)]), /check constraint/);
  });

  t.test('migrating again does nothing', async (t) => {
    const pool = await freshPool(t);
    t.equal(await pgSchemaVersion(pool), 0, 'a database svc never migrated is at 0');
    await migratePg(pool);
    await pool.query(`UPDATE meta SET value = 42 WHERE name = 'state_version'`);
    t.same(await migratePg(pool), { from: PG_MIGRATIONS.length, to: PG_MIGRATIONS.length });
    t.equal(await pgSchemaVersion(pool), PG_MIGRATIONS.length);
    t.same((await pool.query(`SELECT value FROM meta`)).rows, [{ value: 42 }], 'data kept: migration 1 not re-run');
    t.equal((await pool.query(`SELECT count(*) AS n FROM svc_schema_migrations`)).rows[0].n, PG_MIGRATIONS.length);
  });

  // The version is read after the lock is granted; a transaction whose snapshot predates it
  // (the database's default isolation being stricter) would miss the other's migration.
  for (const isolation of ['read committed', 'serializable']) {
    t.test(`two processes migrating one new database at once (${isolation} by default): each migration applied once`, async (t) => {
      const url = await createDatabase(t);
      // Two pools stand for two control processes starting together.
      const options = `-c default_transaction_isolation=${isolation.replace(' ', '\\ ')}`;
      const [a, b] = [await freshPool(t, url, options), await freshPool(t, url, options)];
      t.equal((await a.query(`SHOW default_transaction_isolation`)).rows[0].default_transaction_isolation, isolation);
      const runs = await Promise.all([migratePg(a), migratePg(b), migratePg(a), migratePg(b)]);
      t.same(
        runs.map((r) => r.to),
        new Array(4).fill(PG_MIGRATIONS.length),
        'every one finishes at the build’s version',
      );
      t.equal(runs.filter((r) => r.from === 0).length, 1, 'exactly one found the database new');
      const versions = (await a.query(`SELECT version FROM svc_schema_migrations ORDER BY version`)).rows.map((r) => r.version as number);
      t.same(
        versions,
        PG_MIGRATIONS.map((_, i) => i + 1),
      );
      t.same((await a.query(`SELECT account FROM account_balances ORDER BY account`)).rows.length, 3, 'seed rows inserted once');
    });
  }

  t.test('each migration commits on its own: a failing one leaves the ones before it applied', async (t) => {
    const pool = await freshPool(t);
    const later = [
      ...PG_MIGRATIONS,
      `CREATE TABLE later_ok (x INTEGER)`,
      `CREATE TABLE later_bad (x INTEGER); SELECT no_such_column FROM later_ok`,
    ];
    await t.rejects(migratePg(pool, later), /no_such_column/);
    t.equal(await pgSchemaVersion(pool), PG_MIGRATIONS.length + 1, 'the migrations before the failing one are recorded');
    const tables = (await pool.query(`SELECT to_regclass('later_ok') IS NOT NULL AS ok, to_regclass('later_bad') IS NOT NULL AS bad`))
      .rows[0];
    t.same(tables, { ok: true, bad: false }, 'the failing migration left nothing behind');
  });

  t.test('a database from a newer build is refused, as SQLite refuses one', async (t) => {
    const pool = await freshPool(t);
    await migratePg(pool);
    const newer = PG_MIGRATIONS.length + 1;
    await pool.query(`INSERT INTO svc_schema_migrations (version, applied_at) VALUES ($1, 0)`, [newer]);
    const caught = await migratePg(pool).catch((err: unknown) => err);
    t.ok(caught instanceof StoreOpenError, 'throws StoreOpenError');
    t.equal(
      (caught as Error).message,
      `database schema version ${newer} is newer than this build supports (${PG_MIGRATIONS.length}); upgrade svc`,
    );
    t.equal(await pgSchemaVersion(pool), newer, 'the database is left untouched');

    const path = join(t.testdir(), 'control.db');
    openDatabase(path).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    raw.close();
    const sqlite = (() => {
      try {
        openDatabase(path).close();
      } catch (err) {
        return err as Error;
      }
    })();
    const wording = (message: string | undefined) => message?.replace(/\d+/g, 'N');
    t.equal(wording((caught as Error).message), wording(sqlite?.message), 'the same words as SQLite’s refusal');
  });
}
