/**
 * Crash safety: 200k outcomes are written into control's database through the store; control
 * starts with a 1 ms cadence and is SIGKILLed once it has committed its first batches. After a
 * restart and `svcctl settler run-once`, every outcome is settled exactly once, the balances
 * equal a hand count over the records, and `svcctl ledger verify` passes.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Store } from '../../control/store';
import type { OutcomeRecord } from '../../protocol/outcome';
import { expectedSettlement, outcome, saveEndpoint } from '../fixtures/settlement';
import { keyLedger } from '../fixtures/ledger';
import { startControlProcess, svcctl, waitFor } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

const CALLS = 200_000;
const BATCH_CAP = 2_000;
const ECON = { price: 3000, premium: 120, treasury_fee_bps: 750 };
const FUNDED = 10_000_000_000;

t.test('SIGKILL while settling a large backlog: nothing lost, nothing twice', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const dbPath = join(dataDir, 'control.db');
  const t0 = Date.now() - 3_600_000;

  const records: OutcomeRecord[] = [];
  const kinds = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'latency_breach', 'server_error', 'network_error', 'client_error'] as const;
  for (let i = 0; i < CALLS; i++) {
    records.push(
      outcome({
        endpoint_id: i % 3 === 0 ? 'b' : 'a',
        outcome: kinds[i % 10]!,
        key_id: i % 13 === 0 ? null : `key_${i % 50}`,
        started: t0 + Math.floor(i / 10),
      }),
    );
  }
  const store = await Store.open(dbPath, { receiptsCore: makeReceipts });
  await saveEndpoint(store, 'a', ECON);
  await saveEndpoint(store, 'b', ECON);
  await store.mutate({ actor: 'test', now: t0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(FUNDED, t0, 'test', null));
  for (let i = 0; i < CALLS; i += 5000) await store.outcomes.ingest(records.slice(i, i + 5000), t0 + i);
  await store.close();

  const env = { SVC_SETTLER_CADENCE_MS: '1', SVC_SETTLER_BATCH_CAP: String(BATCH_CAP) };
  const control = await startControlProcess(t, { dataDir, env });
  const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
  t.teardown(() => reader.close());
  const batches = () => reader.prepare(`SELECT count(*) FROM settlement_batches`).pluck().get() as number;
  await waitFor(() => batches() >= 3, 'the first batches', 60_000);
  const exit = await control.kill('SIGKILL');
  t.equal(exit.signal, 'SIGKILL');

  const afterKill = reader.prepare(`SELECT count(*) FROM outcomes WHERE settled_batch IS NULL`).pluck().get() as number;
  t.ok(afterKill > 0 && afterKill < CALLS, `killed mid-backlog (${CALLS - afterKill} settled, ${afterKill} pending)`);
  const partial = reader.prepare(`SELECT coalesce(sum(calls), 0) FROM settlement_batches`).pluck().get() as number;
  t.equal(partial, CALLS - afterKill, 'what the committed batches say they settled is what is marked settled');
  t.equal(
    reader.prepare(`SELECT count(*) FROM unsettled_outcomes`).pluck().get(),
    afterKill,
    'and the settler queue holds exactly the calls not settled',
  );

  const restarted = await startControlProcess(t, { dataDir, env });
  const cli = (...args: string[]) => svcctl(['--data-dir', dataDir, ...args]);
  const run = await cli('settler', 'run-once', '--json');
  t.equal(run.code, 0, run.stderr);
  t.equal(run.json().backlog, 0);

  const unsettled = reader.prepare(`SELECT count(*) FROM outcomes WHERE settled_batch IS NULL`).pluck().get() as number;
  t.equal(unsettled, 0, 'none lost: every outcome settled');
  t.equal(reader.prepare(`SELECT count(*) FROM outcomes`).pluck().get(), CALLS);
  t.equal(reader.prepare(`SELECT sum(calls) FROM settlement_batches`).pluck().get(), CALLS, 'batches account for each call exactly once');
  t.equal(reader.prepare(`SELECT count(*) FROM settlement_batches WHERE calls > ?`).pluck().get(BATCH_CAP), 0, 'no batch above the cap');

  const want = expectedSettlement(records, ECON, FUNDED);
  const balances = new Map(
    ((await cli('ledger', 'balances', '--json')).json().balances as { account: string; balance: number }[]).map((b) => [
      b.account,
      b.balance,
    ]),
  );
  t.equal(balances.get('pool'), want.pool, 'pool');
  t.equal(balances.get('treasury'), want.treasury, 'treasury');
  t.equal(balances.get('external'), -FUNDED, 'external');
  let keysMatch = true;
  for (const [key, amount] of want.keys) if (balances.get(keyLedger(key)) !== amount) keysMatch = false;
  t.ok(keysMatch, 'every key balance equals the hand count');
  t.equal([...balances.keys()].filter((k) => k.startsWith('account:')).length, want.keys.size, 'no other accounts');
  const pool = (await cli('pool', 'show', '--json')).json();
  t.match(pool, { premiums: want.premiums, refunds: want.refunds, shortfall: 0, settled_calls: CALLS, backlog: 0 });

  const verify = await cli('ledger', 'verify');
  t.equal(verify.code, 0, verify.stderr);
  await restarted.stop();
});
