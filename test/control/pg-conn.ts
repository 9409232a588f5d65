/**
 * The PostgreSQL store's statement runner (control/store/pg/conn.ts): SQLite-style parameters
 * compiled to PostgreSQL's, transactions that commit whole or not at all and that nested calls
 * join, the writer lock that runs `serial` transactions one at a time, and `read` transactions
 * that see one snapshot. Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { Pool } from 'pg';
import { PgConn, sql } from '../../control/store/pg/conn';
import { PG_TYPES } from '../../control/store/pg/types';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';

t.test('sql() compiles ? and @name parameters', async (t) => {
  const positional = sql('SELECT ? AS a, ? AS b');
  t.equal(positional.text, 'SELECT $1 AS a, $2 AS b');
  t.same(positional.names, []);
  const named = sql('SELECT @x AS a, @y AS b, @x AS c');
  t.equal(named.text, 'SELECT $1 AS a, $2 AS b, $1 AS c', 'a name used twice is one parameter');
  t.same(named.names, ['x', 'y']);
  t.equal(sql('SELECT ? AS a, ? AS b'), positional, 'one compiled statement per text');
  t.not(named.name, positional.name, 'each statement has its own prepared name');
  t.throws(() => sql('SELECT ?, @x'), /mixes \? and @name/);
  t.throws(() => sql('SELECT @x, ?'), /mixes \? and @name/);
});

t.test('on PostgreSQL', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const conn = async (t: Test): Promise<PgConn> => {
    const pool = new Pool({ connectionString: await createDatabase(t), types: PG_TYPES, max: 4 });
    t.teardown(() => pool.end());
    const c = new PgConn(pool);
    await c.run(sql('CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)'));
    return c;
  };

  t.test('reads and writes, by position and by name', async (t) => {
    const c = await conn(t);
    t.equal(await c.run(sql('INSERT INTO t (id, v) VALUES (?, ?), (?, ?)'), [1, 'a', 2, 'b']), 2, 'run answers rows changed');
    t.same(await c.all(sql('SELECT id, v FROM t ORDER BY id')), [
      { id: 1, v: 'a' },
      { id: 2, v: 'b' },
    ]);
    t.same(await c.get(sql('SELECT v FROM t WHERE id = @id'), { id: 9 }), undefined, 'no row: undefined');
    t.same(await c.get(sql('SELECT v FROM t WHERE id = @id'), { id: 2 }), { v: 'b' });
    t.equal(await c.value(sql('SELECT count(*) FROM t')), 2, 'bigint counts are numbers');
    t.equal(await c.value(sql('SELECT v FROM t WHERE id = ?'), [9]), undefined);
    t.same(await c.column(sql('SELECT id FROM t ORDER BY id DESC')), [2, 1]);
    t.same(await c.raw(sql('SELECT id, v FROM t ORDER BY id')), [
      [1, 'a'],
      [2, 'b'],
    ]);
    await t.rejects(c.get(sql('SELECT v FROM t WHERE id = @id'), {}), /missing parameter @id/);
    await t.rejects(c.get(sql('SELECT v FROM t WHERE id = @id')), /missing parameter @id/);
  });

  t.test('a transaction commits whole or rolls back whole; nested calls join it', async (t) => {
    const c = await conn(t);
    await c.tx(async (tx) => {
      t.ok(tx.inTransaction);
      await tx.run(sql('INSERT INTO t VALUES (1, ?)'), ['one']);
      await tx.tx(async (inner) => {
        t.equal(inner, tx, 'a nested tx runs on the same connection');
        await inner.run(sql('INSERT INTO t VALUES (2, ?)'), ['two']);
      });
    });
    t.equal(await c.value(sql('SELECT count(*) FROM t')), 2);
    await t.rejects(
      c.tx(async (tx) => {
        await tx.run(sql('INSERT INTO t VALUES (3, ?)'), ['three']);
        await tx.run(sql('INSERT INTO t VALUES (1, ?)'), ['duplicate']);
      }),
      /duplicate key/,
    );
    t.equal(await c.value(sql('SELECT count(*) FROM t')), 2, 'the failed transaction left nothing');
    await t.rejects(
      c.tx((tx) => tx.tx(() => Promise.resolve(), 'serial')),
      /serial transaction must start outside/,
      'a serial transaction cannot join a plain one (it would run without the lock)',
    );
  });

  t.test('serial transactions run one at a time', async (t) => {
    const c = await conn(t);
    await c.run(sql('INSERT INTO t VALUES (1, ?)'), ['0']);
    // Read, wait, write: without the lock the two would read the same value and one increment is lost.
    const increment = () =>
      c.tx(async (tx) => {
        const v = Number(await tx.value<string>(sql('SELECT v FROM t WHERE id = 1')));
        await new Promise((resolve) => setTimeout(resolve, 50));
        await tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), [String(v + 1)]);
      }, 'serial');
    await Promise.all([increment(), increment(), increment()]);
    t.equal(await c.value(sql('SELECT v FROM t WHERE id = 1')), '3');
  });

  t.test('a read transaction sees one snapshot and refuses writes', async (t) => {
    const c = await conn(t);
    await c.run(sql('INSERT INTO t VALUES (1, ?)'), ['a']);
    await c
      .tx(async (tx) => {
        t.equal(await tx.value(sql('SELECT count(*) FROM t')), 1);
        await c.run(sql('INSERT INTO t VALUES (2, ?)'), ['b']);
        t.equal(await tx.value(sql('SELECT count(*) FROM t')), 1, 'a commit after the first read is not seen');
        await t.rejects(tx.run(sql('INSERT INTO t VALUES (3, ?)'), ['c']), /read-only/);
      }, 'read')
      .catch(() => undefined);
    t.equal(await c.value(sql('SELECT count(*) FROM t')), 2);
  });
  t.test('a connection the server ends between two statements of a transaction fails the transaction, not the process', async (t) => {
    const c = await conn(t);
    await c.run(sql('INSERT INTO t VALUES (1, ?)'), ['a']);
    const err = await c
      .tx(async (tx) => {
        await tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), ['b']);
        const pid = await tx.value<number>(sql('SELECT pg_backend_pid()'));
        await c.run(sql('SELECT pg_terminate_backend(?)'), [pid]);
        // The connection's end arrives while no statement runs on it (an 'error' event; unheard, it would crash the process).
        await new Promise((resolve) => setTimeout(resolve, 200));
        await tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), ['c']);
      }, 'serial')
      .then(
        () => null,
        (e: unknown) => e,
      );
    t.ok(err instanceof Error, `the transaction failed (${String(err)})`);
    t.equal(await c.value(sql('SELECT v FROM t WHERE id = 1')), 'a', 'nothing of it was committed');
    await c.tx((tx) => tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), ['d']), 'serial');
    t.equal(
      await c.value(sql('SELECT v FROM t WHERE id = 1')),
      'd',
      'the next transaction runs, on another connection, the writer lock free',
    );
  });
});
