/**
 * The control database is opened durable (WAL, synchronous=FULL, foreign keys on), migrated
 * by user_version, reopened idempotently, and refuses a file from a newer build.
 */
import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openDatabase } from '../../control/store/db';
import { StoreOpenError } from '../../control/store/errors';
import { MIGRATIONS } from '../../control/store/migrations';
import { SqliteStore, Store } from '../../control/store';
import { startTestControl } from '../fixtures/control';
import { get } from '../fixtures/public';
import { forEachStore, openTestStore } from '../fixtures/stores';
import { makeReceipts } from '../../control/receipts/maker';

t.test('opening sets WAL, synchronous=FULL, foreign keys and the schema version', async (t) => {
  const path = join(t.testdir(), 'nested', 'dir', 'control.db');
  const store = await SqliteStore.open(path, { receiptsCore: makeReceipts });
  t.teardown(() => store.close());
  const pragma = (name: string) => store.db.pragma(name, { simple: true });
  t.equal(String(pragma('journal_mode')).toLowerCase(), 'wal');
  t.equal(pragma('synchronous'), 2, 'FULL');
  t.equal(pragma('foreign_keys'), 1);
  t.equal(pragma('user_version'), MIGRATIONS.length);
  t.equal(await store.schemaVersion(), MIGRATIONS.length);
  t.ok(MIGRATIONS.length >= 1);

  // WAL is a property of the file: another connection sees it too.
  const other = new Database(path, { readonly: true });
  t.teardown(() => other.close());
  t.equal(String(other.pragma('journal_mode', { simple: true })).toLowerCase(), 'wal', 'the file is in WAL mode');
  t.equal(other.pragma('user_version', { simple: true }), MIGRATIONS.length);
});

t.test('foreign keys are enforced', async (t) => {
  const db = openDatabase(join(t.testdir(), 'control.db'));
  t.teardown(() => db.close());
  t.throws(
    () =>
      db
        .prepare(`INSERT INTO key_secrets (hash, key_id, prefix, created_at) VALUES (?, 'key_missing', 'svc_beta_x', 0)`)
        .run('a'.repeat(64)),
    /FOREIGN KEY/,
    'a secret for a key that does not exist is refused',
  );
});

t.test('reopening is idempotent and keeps data', async (t) => {
  const path = join(t.testdir(), 'control.db');
  const first = await SqliteStore.open(path, { receiptsCore: makeReceipts });
  const before = await first.version();
  const { version } = await first.mutate(
    { actor: 'test', now: 1_000 },
    { action: 'test.change', changes: [{ kind: 'flags', entity: '*' }] },
    (tx) => tx.flags.set('maintenance_mode', true, 1_000, 'test', 'kept'),
  );
  t.equal(version, before + 1, 'a change bumps the state version');
  const tables = (db: Database.Database) =>
    (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all() as string[]).join(',');
  const schemaBefore = tables(first.db);
  await first.close();

  for (let i = 0; i < 2; i++) {
    const again = await SqliteStore.open(path, { receiptsCore: makeReceipts });
    t.equal(await again.schemaVersion(), MIGRATIONS.length, `reopen ${i + 1}: same schema version`);
    t.equal(tables(again.db), schemaBefore, `reopen ${i + 1}: same tables`);
    t.equal(await again.version(), version, `reopen ${i + 1}: state version kept (migration 1 not re-run)`);
    const flag = await again.flags.get('maintenance_mode');
    t.equal(flag?.value, true, `reopen ${i + 1}: data kept`);
    t.equal(flag?.note, 'kept');
    await again.close();
  }
});

t.test('a failed mutation leaves no audit row and no version bump', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const version = await store.version();
    const auditRows = (await store.audit.list(10_000)).length;
    await t.rejects(
      store.mutate({ actor: 'test', now: 1 }, { action: 'test.fail', changes: [{ kind: 'flags', entity: '*' }] }, async (tx) => {
        await tx.flags.set('beta_gate_enabled', true, 1, 'test', null);
        throw new Error('boom');
      }),
    );
    t.equal(await store.version(), version, 'version unchanged');
    t.equal((await store.audit.list(10_000)).length, auditRows, 'no audit row');
    t.equal((await store.flags.get('beta_gate_enabled'))?.value, false, 'the write inside was rolled back');
  });
});

t.test('a database from a newer build refuses to open', async (t) => {
  const path = join(t.testdir(), 'control.db');
  await (await Store.open(path, { receiptsCore: makeReceipts })).close();
  const raw = new Database(path);
  raw.pragma(`user_version = ${MIGRATIONS.length + 1}`);
  raw.close();

  let caught: unknown;
  try {
    await (await Store.open(path, { receiptsCore: makeReceipts })).close();
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof StoreOpenError, 'throws StoreOpenError');
  const message = (caught as Error | undefined)?.message ?? '';
  t.match(message, String(MIGRATIONS.length + 1), 'names the file’s version');
  t.match(message, String(MIGRATIONS.length), 'names the supported version');
  t.match(message, /newer/, 'says the file is newer');

  const check = new Database(path, { readonly: true });
  t.equal(check.pragma('user_version', { simple: true }), MIGRATIONS.length + 1, 'the file is left untouched');
  check.close();
});

t.test('a running control reports its store and durability settings', async (t) => {
  const control = await startTestControl(t);
  const res = await control.admin('GET', '/_admin/v1/status');
  t.equal(res.status, 200);
  t.same(res.body.store, {
    kind: 'sqlite',
    path: join(control.dataDir, 'control.db'),
    journal_mode: 'wal',
    synchronous: 'full',
    schema_version: MIGRATIONS.length,
    schema_expected: MIGRATIONS.length,
  });
  t.notOk('database' in res.body, 'the store replaced the database field');
  t.equal(res.body.bootstrap.database_ready, true);
});

t.test('both statuses judge the schema by what the store says this build expects', async (t) => {
  const control = await startTestControl(t);
  const store = control.handle.ctx.store;
  const describe = store.describe.bind(store);
  // A store one migration behind its build (as a store of another dialect could be).
  store.describe = async () => {
    const d = await describe();
    return { ...d, schema_expected: d.schema_version + 1 };
  };
  const admin = await control.admin('GET', '/_admin/v1/status');
  t.equal(admin.body.store.schema_expected, MIGRATIONS.length + 1);
  t.equal(admin.body.bootstrap.database_ready, false, 'admin status: not ready');
  const pub = await get(control, control.urls.api, '/api/v1/status');
  t.equal(pub.status, 200);
  t.same(
    pub.body.bootstrap.database,
    { ready: false, schema_version: MIGRATIONS.length, schema_expected: MIGRATIONS.length + 1 },
    'public status: not ready',
  );
});
