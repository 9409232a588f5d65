/**
 * Every statement the store compiles over the outcomes (the `outcomes` view, and the tables
 * behind it since migration 19: the outcome records, the settler's queue, the settled calls)
 * reads through an index, never by walking a table's rows (only the counts of all calls or of
 * the backlog walk a whole table or index, and `ledger verify`'s checks, compiled with
 * `walks`). This is what allowed migration 13 to drop `outcomes_by_endpoint_time`, which every
 * ingested row paid for; an index dropped or a query changed so that it walks the table fails
 * here. The statements are every one `sql()` compiled (`compiledStatements`), not only those a
 * workload happens to run: a new statement is checked the day it is written.
 */
import t from 'tap';
import { join } from 'node:path';
import { SqliteStore } from '../../control/store';
import { compiledStatements } from '../../control/store/conn';
import { T0, settleAll } from '../fixtures/ledger';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { NIL_CALL_ID } from '../../protocol/outcome';
import { makeReceipts } from '../../control/receipts/maker';

t.test('statements over outcomes use an index', async (t) => {
  const store = await SqliteStore.open(join(t.testdir(), 'control.db'), { receiptsCore: makeReceipts });
  t.teardown(() => store.close());
  // Most statements are compiled when their module loads; a few at first use (ingest's chunk
  // statements by chunk size, a filtered activity page): run each kind once.
  await saveEndpoint(store, 'ep');
  await store.outcomes.ingest([outcome({ started: T0 }), outcome({ started: T0, outcome: 'server_error' })], T0);
  await settleAll(store);
  const cursor = { started_at: 1, call_id: NIL_CALL_ID };
  await Promise.all([
    store.publicReads.activity(1, null),
    store.publicReads.activity(1, cursor),
    store.publicReads.activity(1, null, { endpointId: null, outcome: null }),
    store.publicReads.refunds(1, 'x'),
    store.publicReads.accountCalls('k', 1, cursor),
  ]);
  const prepared = new Set(
    compiledStatements()
      .filter((s) => !s.walks && !s.pgOnly)
      .map((s) => s.sqlite),
  );
  const walking = compiledStatements().filter((s) => s.walks);
  t.ok(walking.length >= 10, `ledger verify's checks are marked as walking their tables (${walking.length})`);

  const indexes = store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index'`).pluck().all();
  t.notOk(indexes.includes('outcomes_by_endpoint_time'), 'migration 13 dropped outcomes_by_endpoint_time');

  const tables = /\b(outcomes|outcome_records|unsettled_outcomes|settled_calls)\b/;
  const reads = [...prepared].filter((sql) => tables.test(sql) && !/^\s*INSERT\b[^]*\bVALUES\b/i.test(sql));
  t.ok(reads.length >= 25, `the store prepares its statements over outcomes (${reads.length})`);
  // A count of all calls or of the backlog, alone or as a statement's subquery, walks its table.
  const count = /\bSELECT count\(\*\) FROM (outcome_records|unsettled_outcomes)\s*(\)|$)/;
  for (const sql of reads) {
    const named = [...new Set(sql.match(/@\w+/g) ?? [])].map((p) => p.slice(1));
    const args =
      named.length > 0 ? [Object.fromEntries(named.map((p) => [p, 1]))] : new Array<number>((sql.match(/\?/g) ?? []).length).fill(1);
    const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail);
    const onOutcomes = plan.filter((d) => /^(SEARCH|SCAN) (outcomes|outcome_records|unsettled_outcomes|settled_calls|o|q|s|i)\b/.test(d));
    const label = sql.replace(/\s+/g, ' ').trim().slice(0, 80);
    t.ok(onOutcomes.length > 0, `${label}: reads outcomes`);
    t.same(
      onOutcomes.filter(
        (d) =>
          !/ USING (COVERING INDEX|INDEX|PRIMARY KEY)\b/.test(d) &&
          !(count.test(sql) && /^SCAN (outcome_records|unsettled_outcomes)$/.test(d)),
      ),
      [],
      `${label}: through an index (${onOutcomes.join('; ')})`,
    );
  }
});
