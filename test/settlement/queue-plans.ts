/**
 * On PostgreSQL, the settler's statements seek in the queue's index (`unsettled_outcomes`)
 * whatever the planner estimates and whenever their plans were made (`SETTLER_PLANNING`,
 * control/store/sql/settlement.ts), and the backlog's reads outside the settler are planned
 * as they run (`SqlOptions.replan`, control/store/pg/conn.ts). The case it guards: a control
 * settles a trickle of calls, then idles with a drained queue that a vacuum truncated to no
 * pages, its settler walking the empty queue at every run; then a burst queues tens of
 * thousands of calls before autovacuum analyzes the table. Prepared statements planned during
 * the trickle and the idle runs keep scanning the whole queue at each walk and batch of the
 * burst's drain; planned afresh, a batch's read estimates a handful of calls and collects and
 * sorts the endpoint's whole backlog. Either way the drain's cost grows with the backlog squared.
 *
 * The plans are the server's own (`auto_explain`, sent to the settler's connections as notices).
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { Client, Pool } from 'pg';
import { planBatch } from '../../control/settler/plan';
import { GROUP_COMMIT_CALLS, runRounds } from '../../control/settler/settler';
import { PgConn } from '../../control/store/pg/conn';
import { READER_SETTINGS } from '../../control/store/sql/settlement';
import { openShared, pgTables } from '../../control/store/pg/tables';
import { PG_TYPES } from '../../control/store/pg/types';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { T0 } from '../fixtures/ledger';
import { withPostgres } from '../fixtures/postgres';
import { openTestStore } from '../fixtures/stores';
import { makeReceipts } from '../../control/receipts/maker';

/** Every statement's plan, as a notice to the client that ran it. */
const EXPLAIN_ALL = `LOAD 'auto_explain';
  SET auto_explain.log_min_duration = 0;
  SET auto_explain.log_level = notice;
  SET client_min_messages = notice`;

/**
 * Settle a trickle, idle on the vacuumed queue, then settle a burst, and check the plans of the
 * burst's drain. `reader`: whether the settler's reader can connect (if not, the settler reads
 * in its transactions, `SettlementGroup.ahead`).
 */
async function burstAfterIdle(t: Test, reader: 'connects' | 'refused'): Promise<void> {
  const url = await withPostgres(t);
  if (url === null) return;
  const dataDir = t.testdir();
  // The database, and everything but the settler, on an ordinary store.
  const store = await openTestStore(t, 'postgres', { databaseUrl: url, dataDir, receipts: false });
  await saveEndpoint(store, 'ep');

  // The settler's table on connections of its own whose statements report their plans.
  const plans: string[] = [];
  // As the store makes them: the settler's transactions on a pool, its reader on one of its own.
  const refused = 'postgres://127.0.0.1:1/none'; // nothing listens on port 1
  const pools = [
    { connectionString: url, options: '' },
    { connectionString: reader === 'connects' ? url : refused, options: READER_SETTINGS },
  ].map((settings) => {
    const pool = new Pool({ ...settings, types: PG_TYPES, max: 1 });
    pool.on('connect', (client) => {
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      void client.query(EXPLAIN_ALL); // queued ahead of the connection's first statement
    });
    return pool;
  });
  const [writerPool, readerPool] = pools as [Pool, Pool];
  const conn = new PgConn(writerPool);
  const shared = openShared({ dataDir, readerPool, receipts: false, receiptsCore: makeReceipts, idSecret: Buffer.alloc(32) });
  t.teardown(async () => {
    await shared.close();
    await writerPool.end();
  });
  const settlement = pgTables(conn, shared).settlement;
  const drain = async (): Promise<number> => {
    const next = runRounds(1000);
    let calls = 0;
    for (;;) {
      const group = await settlement.settleGroup(next, T0 + 1e9, T0, planBatch, GROUP_COMMIT_CALLS);
      if (group.length === 0) return calls;
      next.groupMade();
      calls += group.reduce((n, b) => n + b.calls, 0);
    }
  };

  const admin = new Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  const pages = async () => Number((await admin.query(`SELECT pg_relation_size('unsettled_outcomes') / 8192 AS pages`)).rows[0].pages);
  // As autovacuum leaves a queue it has seen: its size known (a table never vacuumed is taken to be ten pages at least).
  await admin.query('VACUUM unsettled_outcomes');
  // A trickle: a few calls at a time, settled batch by batch, more times than PostgreSQL plans
  // a prepared statement afresh before it keeps a plan (five).
  for (let i = 0; i < 8; i++) {
    await store.outcomes.ingest(
      Array.from({ length: 5 }, (_, j) => outcome({ started: T0 + i * 10 + j })),
      T0,
    );
    t.equal(await drain(), 5);
  }
  // The drained queue vacuumed again: no pages.
  await admin.query('VACUUM unsettled_outcomes');
  t.equal(await pages(), 0, 'the vacuum truncated the drained queue');
  // Idle: the settler's runs, and reads of the backlog, find the queue empty.
  for (let i = 0; i < 8; i++) {
    t.equal(await drain(), 0);
    t.equal((await settlement.backlog()).count, 0);
  }

  // The burst, ingested before any ANALYZE of the queue.
  const burst = 30_000;
  for (let i = 0; i < burst; i += 2000) {
    await store.outcomes.ingest(
      Array.from({ length: 2000 }, (_, j) => outcome({ started: T0 + 1000 + i + j })),
      T0 + 1,
    );
  }
  t.ok((await pages()) > 100, 'the burst fills the queue');
  plans.length = 0;
  t.equal((await settlement.backlog()).oldest_received_at, T0 + 1);
  t.equal(await drain(), burst, 'the burst settles whole');

  // How each statement that seeks into the queue (all but counting it) read it: the scans of its plan.
  const scansOf = (p: string) =>
    [...p.matchAll(/(Seq Scan|Index Scan|Index Only Scan|Bitmap Heap Scan)[^\n]* on unsettled_outcomes/g)].map((m) => m[1]!);
  const seen = (marker: string) => plans.filter((p) => p.includes(marker)).map(scansOf);
  const walks = seen('LEFT JOIN unnest'); // Q.heads, on the reader (or in the transaction)
  const batches = seen('LIMIT $'); // Q.calls, on the reader (or in the transaction)
  const writes = seen('DELETE FROM unsettled_outcomes'); // Q.write, in the settling transaction
  const oldest = seen('SELECT min(('); // backlog()'s oldest head, on the pool
  t.ok(walks.length > burst / 1000, `each round's walk was seen (${walks.length})`);
  t.equal(batches.length, burst / 1000, "each batch's read was seen");
  t.equal(writes.length, burst / 1000, "each batch's write was seen");
  t.equal(oldest.length, 1, "backlog()'s read was seen");
  const ordered = (scans: string[]) => scans.length > 0 && scans.every((s) => s === 'Index Scan' || s === 'Index Only Scan');
  t.same(
    [...walks, ...batches].filter((scans) => !ordered(scans)),
    [],
    "the settler reads the queue in its index's order, never collecting and sorting what matches",
  );
  t.same(
    [...writes, ...oldest].filter((scans) => scans.length === 0 || scans.includes('Seq Scan')),
    [],
    'no statement scanned the whole queue',
  );
}

t.test('a burst queued after idle runs on a vacuumed, empty queue is settled with index seeks, not scans of the queue', (t) =>
  burstAfterIdle(t, 'connects'),
);

t.test('the same when the settler reads in its transactions, its reader unable to connect', (t) => burstAfterIdle(t, 'refused'));
