/**
 * Receipts survive a crash mid-settlement: 60k outcomes are written into control's database,
 * control starts with a 1 ms cadence and is SIGKILLed once it has committed its first batches.
 * Right after the kill every committed batch has its receipt and no receipt lacks its batch;
 * after a restart and `svcctl settler run-once` the chain covers batches 1..n once each (no
 * gap, no duplicate), and `svcctl receipts verify` and `svcctl ledger verify` pass.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Store } from '../../control/store';
import type { OutcomeRecord } from '../../protocol/outcome';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { startControlProcess, svcctl, waitFor } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

const CALLS = 60_000;
const BATCH_CAP = 500;

t.test('SIGKILL while settling: no batch without its receipt, no gap, no duplicate', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const dbPath = join(dataDir, 'control.db');
  const t0 = Date.now() - 3_600_000;
  const kinds = ['ok', 'ok', 'ok', 'server_error', 'network_error', 'client_error'] as const;
  const records: OutcomeRecord[] = [];
  for (let i = 0; i < CALLS; i++) {
    records.push(
      outcome({
        endpoint_id: ['a', 'b', 'c'][i % 3]!,
        outcome: kinds[i % kinds.length]!,
        key_id: i % 7 === 0 ? null : `key_${i % 20}`,
        started: t0 + Math.floor(i / 10),
      }),
    );
  }
  const store = await Store.open(dbPath, { receiptsCore: makeReceipts });
  for (const id of ['a', 'b', 'c']) await saveEndpoint(store, id, { price: 3000, premium: 120, treasury_fee_bps: 750 });
  await store.mutate({ actor: 'test', now: t0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(10_000_000_000, t0, 'test', null));
  for (let i = 0; i < CALLS; i += 5000) await store.outcomes.ingest(records.slice(i, i + 5000), t0 + i);
  await store.close();

  const env = { SVC_SETTLER_CADENCE_MS: '1', SVC_SETTLER_BATCH_CAP: String(BATCH_CAP), SVC_CACHE_STATS_TTL_S: '1' };
  const control = await startControlProcess(t, { dataDir, env });
  const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
  t.teardown(() => reader.close());
  const count = (sql: string) => reader.prepare(sql).pluck().get() as number;
  await waitFor(() => count(`SELECT count(*) FROM settlement_batches`) >= 3, 'the first batches', 60_000);
  const exit = await control.kill('SIGKILL');
  t.equal(exit.signal, 'SIGKILL');

  const batches = count(`SELECT count(*) FROM settlement_batches`);
  const pending = count(`SELECT count(*) FROM outcomes WHERE settled_batch IS NULL`);
  t.ok(pending > 0 && pending < CALLS, `killed mid-backlog (${batches} batches committed, ${pending} calls pending)`);
  t.equal(count(`SELECT count(*) FROM receipts`), batches, 'one receipt per committed batch');
  t.equal(
    count(`SELECT count(*) FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE r.batch IS NULL`),
    0,
    'no batch without its receipt',
  );
  t.equal(count(`SELECT coalesce(max(batch), 0) FROM receipts`), batches, 'receipts numbered 1..n');

  const restarted = await startControlProcess(t, { dataDir, env });
  const run = await svcctl(['--data-dir', dataDir, 'settler', 'run-once', '--json']);
  t.equal(run.code, 0, run.stderr);
  t.equal(run.json().backlog, 0);
  const total = count(`SELECT count(*) FROM settlement_batches`);
  t.ok(total > batches);
  t.equal(count(`SELECT count(*) FROM receipts`), total, 'one receipt per batch after the restart');
  t.equal(count(`SELECT count(DISTINCT batch) FROM receipts`), total, 'no duplicate');
  t.equal(count(`SELECT max(batch) - min(batch) + 1 FROM receipts`), total, 'no gap');

  const indexer = restarted.urls.indexer!;
  await waitFor(
    async () => ((await (await fetch(`${indexer}/api/stats`)).json()) as { settled_batches: number }).settled_batches === total,
    'the indexer to report every batch',
  );
  const receipts = await svcctl(['receipts', 'verify', '--indexer', indexer, '--json']);
  t.equal(receipts.code, 0, receipts.stderr);
  t.match(receipts.json(), { ok: true, receipts: total });
  const ledger = await svcctl(['--data-dir', dataDir, 'ledger', 'verify']);
  t.equal(ledger.code, 0, ledger.stderr);
  await restarted.stop();
});
