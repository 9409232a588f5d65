/**
 * `openStore`: the store `databaseUrl` names. Null is SQLite in the data dir, as before; a
 * PostgreSQL URL goes to the PostgreSQL opener and never falls back to SQLite; an error names
 * the URL only with its password masked, and control's start fails cleanly with it.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StoreOpenError } from '../../control/store/errors';
import type { Store } from '../../control/store';
import { openStore, type PgOpener } from '../../control/store/open';
import { captureLogs, startTestControl } from '../fixtures/control';
import { makeReceipts } from '../../control/receipts/maker';

const PASSWORD = 'Hunter2-9f3k';
const URL_WITH_PASSWORD = `postgres://svc:${PASSWORD}@127.0.0.1:1/svc`;
const MASKED = 'postgres://svc:***@127.0.0.1:1/svc';

async function storeOpenError(t: tap.Test, opening: Promise<unknown>): Promise<StoreOpenError> {
  try {
    await opening;
  } catch (err) {
    t.ok(err instanceof StoreOpenError, `rejects with StoreOpenError (got ${(err as Error).name})`);
    return err as StoreOpenError;
  }
  t.fail('expected a StoreOpenError');
  return new StoreOpenError('(nothing thrown)');
}

t.test('no database URL: SQLite at the database path, receipts as asked', async (t) => {
  const dataDir = t.testdir();
  const databasePath = join(dataDir, 'control.db');
  let pgCalls = 0;
  const opener: PgOpener = () => {
    pgCalls++;
    return Promise.reject(new Error('not PostgreSQL'));
  };
  const store = await openStore({ dataDir, databasePath, databaseUrl: null, receiptsCore: makeReceipts }, opener);
  t.teardown(() => store.close());
  const described = await store.describe();
  t.equal(described.kind, 'sqlite');
  t.match(described, { path: databasePath });
  t.ok(existsSync(databasePath), 'the file is created');
  t.equal(store.receiptsEnabled, true, 'receipts on by default');
  t.equal(pgCalls, 0, 'the PostgreSQL opener is not called');
  await store.close();

  const unsigned = await openStore({ dataDir, databasePath, databaseUrl: null, receipts: false, receiptsCore: makeReceipts });
  t.teardown(() => unsigned.close());
  t.equal(unsigned.receiptsEnabled, false, 'receipts: false reaches the store');
});

t.test('a PostgreSQL URL goes to the opener with the data dir and the receipts options', async (t) => {
  const dataDir = t.testdir();
  const databasePath = join(dataDir, 'control.db');
  const opened = {} as Store;
  const calls: Parameters<PgOpener>[] = [];
  const opener: PgOpener = (...args) => {
    calls.push(args);
    return Promise.resolve(opened);
  };
  t.equal(
    await openStore({ dataDir, databasePath, databaseUrl: URL_WITH_PASSWORD, receiptsCore: makeReceipts }, opener),
    opened,
    "the opener's store",
  );
  t.equal(
    await openStore({ dataDir, databasePath, databaseUrl: 'postgresql://h/svc', receipts: false, receiptsCore: makeReceipts }, opener),
    opened,
  );
  t.same(calls, [
    [URL_WITH_PASSWORD, { dataDir, receiptsCore: makeReceipts }],
    ['postgresql://h/svc', { dataDir, receipts: false, receiptsCore: makeReceipts }],
  ]);
  t.notOk(existsSync(databasePath), 'no SQLite file is created');
});

t.test('a PostgreSQL database that cannot be opened is refused, masked, not served from SQLite', async (t) => {
  const dataDir = t.testdir();
  const databasePath = join(dataDir, 'control.db');
  const err = await storeOpenError(
    t,
    openStore({ dataDir, databasePath, databaseUrl: URL_WITH_PASSWORD, receiptsCore: makeReceipts }, () =>
      Promise.reject(new Error('connect ECONNREFUSED')),
    ),
  );
  t.match(err.message, /^PostgreSQL store at .*: connect ECONNREFUSED$/);
  t.match(err.message, MASKED, 'names the URL masked');
  t.notMatch(err.message, PASSWORD, 'never with its password');
  t.notMatch(err.stack ?? '', PASSWORD);
  t.notOk(existsSync(databasePath), 'no SQLite file is created');
});

t.test('a URL that is not PostgreSQL is refused, masked, before any opener', async (t) => {
  const dataDir = t.testdir();
  let pgCalls = 0;
  const opener: PgOpener = () => {
    pgCalls++;
    return Promise.resolve({} as Store);
  };
  const databasePath = join(dataDir, 'control.db');
  const err = await storeOpenError(
    t,
    openStore({ dataDir, databasePath, databaseUrl: `mysql://svc:${PASSWORD}@h/svc`, receiptsCore: makeReceipts }, opener),
  );
  t.match(err.message, 'mysql://svc:***@h/svc is not a postgres:// or postgresql:// URL');
  t.notMatch(err.message, PASSWORD);
  t.equal(pgCalls, 0);
  t.notOk(existsSync(databasePath));
});

t.test('control started with a PostgreSQL URL it cannot open: no password in the error or the logs', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const logs = captureLogs();
  const err = await storeOpenError(t, startTestControl(t, { dataDir, flags: { databaseUrl: URL_WITH_PASSWORD }, log: logs.log }));
  t.match(err.message, MASKED);
  t.notMatch(err.message, PASSWORD, 'the error has no password');
  t.notMatch(logs.text(), PASSWORD, 'nor has any log line');
  t.notOk(existsSync(join(dataDir, 'control.db')), 'control did not fall back to SQLite');

  // The data dir's lock was released: control starts on it again, on SQLite.
  const control = await startTestControl(t, { dataDir });
  const status = await control.admin('GET', '/_admin/v1/status');
  t.equal(status.status, 200);
  t.equal(status.body.store.kind, 'sqlite');
});
