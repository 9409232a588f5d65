/**
 * The PostgreSQL store's statement runner (control/store/pg/conn.ts): SQLite-style parameters
 * compiled to PostgreSQL's, transactions that commit whole or not at all and that nested calls
 * join, the writer lock that runs `serial` transactions one at a time, and `read` transactions
 * that see one snapshot. Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { Pool, type PoolClient } from 'pg';
import { PgConn, sql } from '../../control/store/pg/conn';
import { PG_TYPES } from '../../control/store/pg/types';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { waitFor } from '../fixtures/stack';

t.test('sql() compiles ? and @name parameters', async (t) => {
  const positional = sql('SELECT ? AS a, ? AS b');
  t.equal(positional.text, 'SELECT $1 AS a, $2 AS b');
  t.same(positional.names, []);
  const named = sql('SELECT @x AS a, @y AS b, @x AS c');
  t.equal(named.text, 'SELECT $1 AS a, $2 AS b, $1 AS c', 'a name used twice is one parameter');
  t.same(named.names, ['x', 'y']);
  t.equal(sql('SELECT ? AS a, ? AS b'), positional, 'one compiled statement per text');
  t.not(named.name, positional.name, 'each statement has its own prepared name');
  const replanned = sql('SELECT ? AS a, ? AS b', { replan: true });
  t.equal(replanned.name, undefined, 'a statement planned at each execution is not prepared');
  t.equal(replanned.text, positional.text);
  t.equal(sql('SELECT ? AS a, ? AS b', { replan: true }), replanned, 'compiled once too');
  t.equal(sql('SELECT ? AS a, ? AS b').name, positional.name, 'the prepared one of the same text stays prepared');
  t.throws(() => sql('SELECT ?, @x'), /mixes \? and @name/);
  t.throws(() => sql('SELECT @x, ?'), /mixes \? and @name/);
});

t.test('on PostgreSQL', async (t) => {
  if (skipWithoutPostgres(t)) return;
  /** A fresh table `t` on a pool of 4; `onAcquire` hears every client checked out of the pool. */
  const conn = async (t: Test, onAcquire?: (client: PoolClient) => void): Promise<PgConn> => {
    const pool = new Pool({ connectionString: await createDatabase(t), types: PG_TYPES, max: 4 });
    t.teardown(() => pool.end());
    if (onAcquire) pool.on('acquire', onAcquire);
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
    t.same(
      await c.get(sql('SELECT v FROM t WHERE id = @id', { replan: true }), { id: 2 }),
      { v: 'b' },
      'an unprepared statement binds the same',
    );
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
    // Read, then write only once every other increment still to run has either read too (no lock:
    // they all read the same value and increments are lost) or waits for the writer lock.
    const TOTAL = 3;
    let reads = 0;
    let written = 0;
    const waiting = sql(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                         WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`);
    const lockWaiters = async () => Number(await c.value(waiting));
    const increment = () =>
      c.tx(async (tx) => {
        const v = Number(await tx.value<string>(sql('SELECT v FROM t WHERE id = 1')));
        reads++;
        await waitFor(
          async () => reads - written - 1 + (await lockWaiters()) >= TOTAL - written - 1,
          'every other increment reading or waiting for the lock',
        );
        await tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), [String(v + 1)]);
        written++;
      }, 'serial');
    await Promise.all(Array.from({ length: TOTAL }, increment));
    t.equal(await c.value(sql('SELECT v FROM t WHERE id = 1')), String(TOTAL));
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
    let acquired: PoolClient | undefined;
    const c = await conn(t, (client) => (acquired = client));
    await c.run(sql('INSERT INTO t VALUES (1, ?)'), ['a']);
    const err = await c
      .tx(async (tx) => {
        await tx.run(sql('UPDATE t SET v = ? WHERE id = 1'), ['b']);
        const pid = await tx.value<number>(sql('SELECT pg_backend_pid()'));
        const ended = new Promise((resolve) => acquired!.once('end', resolve)); // the transaction's client: the last checked out so far
        await c.run(sql('SELECT pg_terminate_backend(?)'), [pid]);
        // The connection's end arrives while no statement runs on it (an 'error' event, then 'end';
        // unheard, the 'error' would crash the process).
        await ended;
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
