/** A database URL as svc prints it: the password masked, nothing of a value that does not parse. */
import t from 'tap';
import { databaseUrlSecrets, isPostgresUrl, maskDatabaseUrl, UNPARSABLE_DATABASE_URL } from '../../protocol/database-url';

t.test('the password is masked, the rest shown as written', async (t) => {
  const cases: [string, string][] = [
    ['postgres://u:secret@h:5432/db', 'postgres://u:***@h:5432/db'],
    ['postgresql://svc:s3cr3t@db.example.com/svc', 'postgresql://svc:***@db.example.com/svc'],
    ['postgres://u:secret@[::1]:5432/db?sslmode=require', 'postgres://u:***@[::1]:5432/db?sslmode=require'],
    ['postgres://u:p%40ss%2Fw0rd@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:p@ss@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:pa ss@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:secret@h/db?password=other', 'postgres://u:***@h/db?password=***'],
    ['postgres://h/db?sslpassword=k&application_name=svc', 'postgres://h/db?sslpassword=***&application_name=svc'],
  ];
  for (const [url, shown] of cases) t.equal(maskDatabaseUrl(url), shown, url);
});

t.test('a URL without a password is unchanged', async (t) => {
  for (const url of [
    'postgres://u@h:5432/db',
    'postgres://h/db',
    'postgresql://localhost/svc?sslmode=verify-full',
    'postgres://%2Fvar%2Frun%2Fpostgresql/svc',
    'postgres:///svc',
  ])
    t.equal(maskDatabaseUrl(url), url, url);
});

t.test('a value that does not parse is never echoed', async (t) => {
  for (const value of [
    '',
    'not a url',
    'host=h user=u password=secret dbname=db',
    'postgres://u:secret@',
    'postgres://u:secret@/db',
    'postgres://u:secret@h1:5432,h2:5432/db',
    'postgres:u:secret@h/db',
    'postgres://u:12/secret@h/db',
    'postgres://u:12?secret@h/db',
    'postgres://u:12#secret@h/db',
  ]) {
    const shown = maskDatabaseUrl(value);
    t.equal(shown, UNPARSABLE_DATABASE_URL, JSON.stringify(value));
    t.notMatch(shown, 'secret');
  }
});

t.test('isPostgresUrl: a postgres:// or postgresql:// URL that can be shown masked', async (t) => {
  for (const url of ['postgres://u:secret@h:5432/db', 'postgresql://h/db?sslmode=require', 'postgres:///svc', 'PostgreSQL://h/db'])
    t.ok(isPostgresUrl(url), url);
  for (const url of [
    '',
    'postgres:',
    'postgres:u:secret@h/db',
    'postgres://u:secret@',
    'postgres://u:12/secret@h/db',
    'postgres://u:secret@h1:5432,h2:5432/db',
    'mysql://u:secret@h/db',
    'https://h/db',
    ' postgres://h/db',
  ])
    t.notOk(isPostgresUrl(url), JSON.stringify(url));
});

t.test("a URL's secrets, as typed and decoded, to take out of messages", async (t) => {
  const cases: [string, string[]][] = [
    ['postgres://u:secret@h/db', ['secret']],
    ['postgres://u:p%40ss%2Fw0rd@h/db', ['p%40ss%2Fw0rd', 'p@ss/w0rd']],
    ['postgres://u:secret@h/db?password=other%21&sslpassword=k', ['secret', 'other!', 'other!'.replace('!', '%21'), 'k']],
    ['postgres://u@h/db', []],
    ['not a url', []],
  ];
  for (const [url, secrets] of cases) t.same(databaseUrlSecrets(url).sort(), secrets.sort(), url);
});
