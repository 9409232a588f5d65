/**
 * How the PostgreSQL store tells "the database cannot be reached" from every other failure
 * (control/store/pg/unreachable.ts), and what it throws then: one `StoreUnavailableError`, 503
 * `svc_store_unavailable` with `Retry-After`, naming the store with its URL's password masked,
 * on a statement, a transaction and a snapshot read alike. The refused connections need no
 * PostgreSQL (a port nothing listens on); a session ended under a transaction does.
 */
import t from 'tap';
import { Pool } from 'pg';
import { PgConn, sql } from '../../control/store/pg/conn';
import { pgReadSession } from '../../control/store/pg/read-session';
import { SqlSnapshotReads } from '../../control/store/sql/snapshot-reads';
import { isUnreachable, unreachable } from '../../control/store/pg/unreachable';
import { STORE_UNAVAILABLE_PUBLIC_DETAIL, StoreUnavailableError } from '../../control/store/unavailable';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { closedPort } from '../fixtures/upstream';

const coded = (code: string, message = 'failed', more: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...more });

t.test('which failures mean the database cannot be reached', async (t) => {
  const unreachableOnes: [string, unknown][] = [
    ['refused', coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432', { syscall: 'connect' })],
    ['unknown host', coded('ENOTFOUND', 'getaddrinfo ENOTFOUND db.internal')],
    ['name not resolved now', coded('EAI_AGAIN')],
    ['no answer', coded('ETIMEDOUT')],
    ['no route', coded('EHOSTUNREACH')],
    ['reset', coded('ECONNRESET', 'read ECONNRESET')],
    ['no unix socket', coded('ENOENT', 'connect ENOENT /run/postgresql/.s.PGSQL.5432', { syscall: 'connect' })],
    ['admin shutdown', coded('57P01', 'terminating connection due to administrator command')],
    ['crash shutdown', coded('57P02')],
    ['cannot connect now', coded('57P03', 'the database system is shutting down')],
    ['too many connections', coded('53300', 'sorry, too many clients already')],
    ['connection failure', coded('08006')],
    ['connection rejected', coded('08004')],
    ['ended under a statement', new Error('Connection terminated unexpectedly')],
    ['ended', new Error('Connection terminated')],
    ['a client no longer queryable', new Error('Client has encountered a connection error and is not queryable')],
    [
      'every address refused',
      Object.assign(new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], ''), { code: 'ECONNREFUSED' }),
    ],
    ['every address refused, no code', new AggregateError([coded('ECONNREFUSED'), coded('EHOSTUNREACH')], '')],
  ];
  for (const [what, err] of unreachableOnes) t.ok(isUnreachable(err), what);
  const others: [string, unknown][] = [
    ['a unique violation', coded('23505', 'duplicate key value')],
    ['a missing table', coded('42P01', 'relation "x" does not exist')],
    ['a protocol violation (a bug, not an outage)', coded('08P01')],
    ['a file missing', coded('ENOENT', "ENOENT: no such file or directory, open 'receipt-signing.key'", { syscall: 'open' })],
    ['bad credentials', coded('28P01', 'password authentication failed for user "svc"')],
    ['a plain error', new Error('settlement: the pool would go below zero')],
    ['one address refused, another a bug', new AggregateError([coded('ECONNREFUSED'), new Error('bug')], '')],
    ['nothing', null],
    ['a string', 'ECONNREFUSED'],
  ];
  for (const [what, err] of others) t.notOk(isUnreachable(err), what);
});

t.test('what is thrown: the store named, its secrets masked, 503 with Retry-After', async (t) => {
  const pool = new Pool({ connectionString: 'postgres://svc:hunter2@db.internal:5432/svc?sslpassword=k3y' });
  t.teardown(() => pool.end());
  const cause = coded('57P01', 'terminating connection for hunter2 and k3y');
  const err = unreachable(cause, pool) as StoreUnavailableError;
  t.type(err, StoreUnavailableError);
  t.equal(err.code, 'svc_store_unavailable');
  t.equal(err.status, 503);
  t.same(err.headers, { 'retry-after': '5' });
  t.equal(err.cause, cause);
  t.same(err.store, {
    kind: 'postgres',
    url: 'postgres://svc:***@db.internal:5432/svc?sslpassword=***',
    reason: 'terminating connection for *** and *** (57P01)',
  });
  t.equal(
    err.message,
    'the PostgreSQL store at postgres://svc:***@db.internal:5432/svc?sslpassword=*** cannot be reached (terminating connection for *** and *** (57P01)); try again in a few seconds',
  );
  t.same(err.toProblem().store, err.store, 'the store as an extension member of the problem');
  t.equal(err.publicDetail, STORE_UNAVAILABLE_PUBLIC_DETAIL, 'the public listeners say less');
  t.equal(unreachable(err, pool), err, 'classified once');
  const other = coded('23505');
  t.equal(unreachable(other, pool), other, 'any other failure is left as it is');
  t.equal((unreachable(new AggregateError([coded('ECONNREFUSED')], ''), pool) as StoreUnavailableError).store.reason, 'connection failed');
});

t.test('a database nobody answers for: statements, transactions and snapshot reads all throw it', async (t) => {
  const port = await closedPort();
  const pool = new Pool({ connectionString: `postgres://svc:hunter2@127.0.0.1:${port}/svc`, max: 2 });
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  const conn = new PgConn(pool);
  const expected = {
    code: 'svc_store_unavailable',
    store: {
      kind: 'postgres',
      url: `postgres://svc:***@127.0.0.1:${port}/svc`,
      reason: new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`),
    },
  };
  await t.rejects(conn.value(sql('SELECT 1')), expected, 'a statement on the pool');
  await t.rejects(
    conn.tx(() => Promise.resolve(1)),
    expected,
    'a transaction',
  );
  await t.rejects(
    conn.tx(() => Promise.resolve(1), 'serial'),
    expected,
    'a serial one',
  );
  await t.rejects(
    conn.exclusive('1', () => Promise.resolve(1)),
    expected,
    'an advisory lock',
  );
  await t.rejects(new SqlSnapshotReads(pgReadSession(pool)).begin(), expected, 'a snapshot read');
});

t.test('a session ended under a transaction', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const url = await createDatabase(t);
  const pool = new Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  const conn = new PgConn(pool);
  const otherPool = new Pool({ connectionString: url, max: 1 });
  t.teardown(() => otherPool.end());
  const other = new PgConn(otherPool);
  await t.rejects(
    conn.tx(async (tx) => {
      const pid = await tx.value<number>(sql('SELECT pg_backend_pid()'));
      await other.value(sql('SELECT pg_terminate_backend(?)'), [pid]);
      await tx.value(sql('SELECT 1'));
    }),
    // node-postgres words it by what it read first: the server's notice, the closed socket, or its own broken state.
    {
      code: 'svc_store_unavailable',
      store: { kind: 'postgres', reason: /terminating connection|Connection terminated|encountered a connection error/ },
    },
    'the next statement names the outage',
  );
  await t.rejects(conn.value(sql('SELECT * FROM no_such_table')), { code: '42P01' }, 'a statement the server refuses is not an outage');
  t.equal(await conn.value(sql('SELECT 2')), 2, 'and the pool carries on');
});
