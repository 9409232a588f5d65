/**
 * `databaseUrl`: control's store. Absent, null or empty is SQLite (null once loaded); a
 * postgres:// or postgresql:// URL is PostgreSQL; file → env → flag as every setting; anything
 * else a ConfigError that shows the value only with its password masked.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../config/load';
import { UNPARSABLE_DATABASE_URL } from '../../protocol/database-url';

const PASSWORD = 'Hunter2-9f3k';

function configError(t: tap.Test, fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    t.ok(err instanceof ConfigError, `throws ConfigError (got ${(err as Error).name})`);
    return err as ConfigError;
  }
  t.fail('expected a ConfigError');
  return new ConfigError([], '(no error thrown)');
}

function fileWith(t: tap.Test, settings: Record<string, unknown>): string {
  const file = join(t.testdir(), 'svc.json');
  writeFileSync(file, JSON.stringify(settings));
  return file;
}

t.test('absent, null or empty: null (SQLite)', async (t) => {
  t.equal(loadConfig({ env: {} }).databaseUrl, null, 'absent');
  t.equal(loadConfig({ file: fileWith(t, { databaseUrl: '' }), env: {} }).databaseUrl, null, 'empty in the file');
  t.equal(loadConfig({ file: fileWith(t, { databaseUrl: null }), env: {} }).databaseUrl, null, 'null in the file');
  t.equal(loadConfig({ env: { SVC_DATABASE_URL: '' } }).databaseUrl, null, 'empty env');
  t.equal(loadConfig({ env: {}, flags: { databaseUrl: '' } }).databaseUrl, null, 'empty flag');
});

t.test('a postgres:// or postgresql:// URL is kept as written', async (t) => {
  for (const url of [
    `postgres://svc:${PASSWORD}@db.example.com:5432/svc`,
    'postgresql://svc@127.0.0.1/svc?sslmode=verify-full',
    'postgres://[::1]:5433/svc',
    'postgres:///svc',
    'POSTGRES://svc@h/svc',
    `postgres://svc:p%40ss%2Fw0rd@h/svc`,
  ]) {
    t.equal(loadConfig({ env: { SVC_DATABASE_URL: url } }).databaseUrl, url, url.replace(PASSWORD, '***'));
  }
});

t.test('file, then env, then flag', async (t) => {
  const file = fileWith(t, { databaseUrl: 'postgres://file@h/db' });
  t.equal(loadConfig({ file, env: {} }).databaseUrl, 'postgres://file@h/db', 'from the file');
  t.equal(loadConfig({ file, env: { SVC_DATABASE_URL: 'postgres://env@h/db' } }).databaseUrl, 'postgres://env@h/db', 'env beats the file');
  t.equal(
    loadConfig({ file, env: { SVC_DATABASE_URL: 'postgres://env@h/db' }, flags: { databaseUrl: 'postgresql://flag@h/db' } }).databaseUrl,
    'postgresql://flag@h/db',
    'a flag beats env and file',
  );
  t.equal(loadConfig({ file, env: { SVC_DATABASE_URL: '' } }).databaseUrl, 'postgres://file@h/db', 'an empty env value is ignored');
  t.equal(
    loadConfig({ file, env: { SVC_DATABASE_URL: 'postgres://env@h/db' }, flags: { databaseUrl: '' } }).databaseUrl,
    null,
    'an empty flag chooses SQLite over env and file',
  );
});

t.test('anything else is refused, naming the key, the source and what is allowed', async (t) => {
  const cases: [unknown, unknown][] = [
    [`mysql://svc:${PASSWORD}@h/db`, 'mysql://svc:***@h/db'],
    [`http://svc:${PASSWORD}@h/db`, 'http://svc:***@h/db'],
    [`postgres:svc:${PASSWORD}@h/db`, UNPARSABLE_DATABASE_URL],
    [`postgres://svc:${PASSWORD}@`, UNPARSABLE_DATABASE_URL],
    [`postgres://svc:${PASSWORD}@h1:5432,h2:5432/db`, UNPARSABLE_DATABASE_URL],
    [`postgres://svc:12/${PASSWORD}@h/db`, UNPARSABLE_DATABASE_URL],
    [`host=h user=svc password=${PASSWORD} dbname=db`, UNPARSABLE_DATABASE_URL],
    ['/var/lib/svc/control.db', UNPARSABLE_DATABASE_URL],
  ];
  for (const [value, shown] of cases) {
    const label = String(value).replace(PASSWORD, '***');
    const err = configError(t, () => loadConfig({ env: { SVC_DATABASE_URL: value as string } }));
    t.same(
      err.issues.map((i) => [i.key, i.source, i.value]),
      [['databaseUrl', 'env SVC_DATABASE_URL', shown]],
      `${label}: shown as ${String(shown)}`,
    );
    t.match(err.message, 'postgres:// or postgresql://', `${label}: says what is allowed`);
    t.notMatch(err.message, PASSWORD, `${label}: the password is not in the message`);
    t.notMatch(JSON.stringify(err.issues), PASSWORD, `${label}: nor in the structured issues`);
  }

  const wrongType = configError(t, () => loadConfig({ file: fileWith(t, { databaseUrl: { password: PASSWORD } }), env: {} }));
  t.equal(wrongType.issues[0]?.key, 'databaseUrl', 'a non-string in the file is refused');
  t.equal(wrongType.issues[0]?.value, UNPARSABLE_DATABASE_URL, 'and not shown');
  t.notMatch(wrongType.message, PASSWORD);
});

t.test('the source is named for a flag and the config file too, still masked', async (t) => {
  const flag = configError(t, () => loadConfig({ env: {}, flags: { databaseUrl: `mysql://u:${PASSWORD}@h/db` } }));
  t.match(flag.message, 'invalid setting databaseUrl (from flag --database-url): "mysql://u:***@h/db"');
  t.notMatch(flag.message, PASSWORD);

  const file = fileWith(t, { databaseUrl: `postgres://u:${PASSWORD}@` });
  const fromFile = configError(t, () => loadConfig({ file, env: {} }));
  t.match(fromFile.message, `invalid setting databaseUrl (from config file ${file}): "${UNPARSABLE_DATABASE_URL}"`);
  t.notMatch(fromFile.message, PASSWORD);
});
