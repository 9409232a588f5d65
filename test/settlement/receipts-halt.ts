/**
 * Control never re-signs a rewritten batch by itself (issue #24). Someone with write access to
 * `control.db` stops control, turns a refunded call of the newest batch into a client error with
 * every row kept consistent (the call, the batch, the refund transfer, both balances, the hourly
 * refund tally), deletes the batch's receipt, and starts control again. Before, the receipts
 * backfill on open signed the rewritten batch with the real key and every verifier passed. Now:
 *
 * - the settler starts `halted`, naming the batch (`settler status`, `status`, text and JSON),
 *   and `settler resume` / `run-once` answer 409 `svc_settler_halted`; nothing settles;
 * - `ledger verify` and `receipts verify` (also with a JWKS pinned before) exit 1 naming it,
 *   and the rewritten call has no proof;
 * - `svcctl receipts reissue N` signs it, with an audit row and a public changelog entry, and
 *   lifts the halt; settlement goes on and both verifiers pass again. Only a receipt saved
 *   before differs from the published one, and the changelog says so.
 *
 * SQLite only: the rewrite is raw SQL on the stopped control's `control.db`, which is the whole
 * scenario. On PostgreSQL, a missing receipt, the gap it leaves and reissue are proven at the
 * store (receipts-store.ts, receipts-pg.ts).
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Outcome } from '../../protocol/outcome';
import type { Receipt, ReissueView } from '../../protocol/receipts';
import type { SettlerStatus } from '../../protocol/settlement';
import type { StatusView } from '../../protocol/admin';
import { runCli } from '../fixtures/cli';
import { startTestControl, type TestControl } from '../fixtures/control';
import { SDK_UA } from '../fixtures/public';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { keyLedger } from '../fixtures/ledger';

const KINDS: Outcome[] = ['ok', 'server_error', 'ok', 'network_error', 'client_error', 'latency_breach'];
const FLAGS = { 'settler.cadenceMs': 3_600_000, 'settler.batchCap': 10 };
const HOUR_MS = 3_600_000;

/**
 * Turn the first refunded call of `batch` into a client error and keep every row that adds up to
 * it consistent; delete the batch's receipt. Returns the call's id.
 */
function rewriteBatch(db: Database.Database, batch: number): string {
  const call = db
    .prepare(
      `SELECT call_id, key_id, endpoint_id, started_at, refund FROM outcomes
       WHERE settled_batch = ? AND refund > 0 AND clamp IS NULL ORDER BY received_at, call_id LIMIT 1`,
    )
    .get(batch) as { call_id: string; key_id: string; endpoint_id: string; started_at: number; refund: number };
  const key = keyLedger(call.key_id);
  const refund = call.refund;
  db.transaction(() => {
    db.prepare(`UPDATE outcome_records SET outcome = 'client_error', status = 404 WHERE call_id = ?`).run(call.call_id);
    db.prepare(`UPDATE settled_calls SET outcome = 'client_error', refund = 0, refund_owed = 0 WHERE call_id = ?`).run(call.call_id);
    db.prepare(`UPDATE settlement_batches SET refunds = refunds - ?, refunds_owed = refunds_owed - ? WHERE id = ?`).run(
      refund,
      refund,
      batch,
    );
    // The refund transfer holding the key's posting: the batch's one (a posting per key), or
    // the key's own in a batch settled before that shape. Take the refund off the key's posting
    // and the pool's; the transfer goes only with its last posting.
    const transfer = db
      .prepare(
        `SELECT t.id, p.amount, pool.amount AS pool FROM ledger_transfers t
           JOIN ledger_postings p ON p.transfer_id = t.id JOIN ledger_postings pool ON pool.transfer_id = t.id AND pool.account = 'pool'
         WHERE t.batch_id = ? AND t.kind = 'refund' AND p.account = ?`,
      )
      .get(batch, key) as { id: number; amount: number; pool: number };
    if (transfer.pool === -refund) {
      db.prepare(`DELETE FROM ledger_postings WHERE transfer_id = ?`).run(transfer.id);
      db.prepare(`DELETE FROM ledger_transfers WHERE id = ?`).run(transfer.id);
    } else {
      if (transfer.amount === refund) db.prepare(`DELETE FROM ledger_postings WHERE transfer_id = ? AND account = ?`).run(transfer.id, key);
      else db.prepare(`UPDATE ledger_postings SET amount = amount - ? WHERE transfer_id = ? AND account = ?`).run(refund, transfer.id, key);
      db.prepare(`UPDATE ledger_postings SET amount = amount + ? WHERE transfer_id = ? AND account = 'pool'`).run(refund, transfer.id);
    }
    db.prepare(`UPDATE account_balances SET balance = balance - ? WHERE account = ?`).run(refund, key);
    db.prepare(`UPDATE account_balances SET balance = balance + ? WHERE account = 'pool'`).run(refund);
    db.prepare(`UPDATE refund_hours SET refunds = refunds - ? WHERE endpoint_id = ? AND hour = ?`).run(
      refund,
      call.endpoint_id,
      Math.floor(call.started_at / HOUR_MS),
    );
    db.prepare(`DELETE FROM receipts WHERE batch = ?`).run(batch);
  })();
  return call.call_id;
}

t.test('a rewritten newest batch without its receipt halts the settler until an operator re-signs it', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir, flags: FLAGS });
  const store = first.handle.ctx.store;
  await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
  t.equal((await runCli(['pool', 'fund', '1000.0', '--json'], { control: first })).code, 0);
  const started = Date.now() - 60_000;
  await store.outcomes.ingest(
    Array.from({ length: 30 }, (_, i) => outcome({ outcome: KINDS[i % KINDS.length]!, key_id: `key_${i % 2}`, started: started + i })),
    Date.now(),
  );
  const settled = await runCli(['settler', 'run-once', '--json'], { control: first });
  t.equal(settled.code, 0, settled.stderr);
  const batch = settled.json<{ batches: { id: number }[] }>().batches.length;
  t.equal(batch, 3, 'three batches settled');
  // What a careful agent saved: the newest receipt and the published keys.
  const saved = (await first.request<Receipt>(`${first.urls.indexer}/api/receipts/${batch}`)).body;
  const pinned = join(dataDir, '..', 'pinned.jwks.json');
  writeFileSync(pinned, (await first.request(`${first.urls.indexer}/api/receipts/keys`)).text);
  await first.close();

  const db = new Database(join(dataDir, 'control.db'));
  const rewritten = rewriteBatch(db, batch);
  db.close();

  const control: TestControl = await startTestControl(t, { dataDir, flags: FLAGS });
  const cli = (...args: string[]) => runCli(args, { control });

  // The settler is halted and names the batch.
  const status = await cli('settler', 'status', '--json');
  t.equal(status.code, 0);
  t.match(status.json<SettlerStatus>(), {
    state: 'halted',
    halted: { batch, batches_without_receipt: 1, reason: `batch ${batch} is settled but has no receipt` },
  });
  t.match(
    (await cli('settler', 'status')).stdout,
    new RegExp(`state: +halted[\\s\\S]*halted: +batch ${batch} is settled but has no receipt`),
  );
  t.match((await cli('settler', 'status')).stdout, new RegExp(`svcctl receipts reissue ${batch}`), 'and how to get out');
  t.match((await cli('status', '--json')).json<StatusView>().settler, { state: 'halted', halted: { batch } });
  t.match((await cli('status')).stdout, new RegExp(`settler +halted,[^\\n]*\\n +halted: batch ${batch} is settled but has no receipt`));
  t.equal((await control.request(`${control.urls.api}/api/v1/status`, { headers: { 'user-agent': SDK_UA } })).body.settler.state, 'halted');

  // It signs and settles nothing, and refuses to be resumed or run.
  await control.handle.ctx.store.outcomes.ingest([outcome({ outcome: 'server_error', key_id: 'key_0' })], Date.now());
  for (const verb of ['resume', 'run-once']) {
    const refused = await cli('settler', verb);
    t.equal(refused.code, 1, `settler ${verb} exits 1`);
    t.match(refused.stderr, new RegExp(`the settler is halted: batch ${batch} is settled but has no receipt.*\\(svc_settler_halted\\)`));
  }
  const problem = await control.admin('POST', '/_admin/v1/settler/run-once');
  t.equal(problem.status, 409);
  t.match(problem.headers.get('content-type'), /^application\/problem\+json/);
  t.match(problem.body, { code: 'svc_settler_halted', batch, detail: new RegExp(`svcctl receipts reissue ${batch}`) });
  t.equal((await control.handle.ctx.store.settlement.backlog()).count, 1, 'nothing settled');
  t.equal(await control.handle.ctx.store.receipts.get(batch), null, 'and nothing signed');

  // Both verifiers fail naming the batch; the rewritten call has no proof.
  const ledger = await cli('ledger', 'verify');
  t.equal(ledger.code, 1);
  t.match(ledger.stderr, `ledger verify failed: batch ${batch} has no receipt`, 'every other invariant holds: the rewrite is consistent');
  const receipts = await cli('receipts', 'verify', '--indexer', control.urls.indexer);
  t.equal(receipts.code, 1);
  t.match(receipts.stderr, `receipts verify failed: batch ${batch}: no receipt`);
  const withPinned = await cli('receipts', 'verify', '--indexer', control.urls.indexer, '--jwks', pinned);
  t.equal(withPinned.code, 1);
  t.match(withPinned.stderr, `batch ${batch}: no receipt`);
  t.match((await control.request(`${control.urls.indexer}/api/calls/${rewritten}/proof`)).body, { code: 'svc_not_settled' });

  // The operator's way out, knowingly: reissue. Refused for what it must not sign.
  t.equal((await cli('receipts', 'reissue', 'seven')).code, 2, 'a batch number is required');
  t.match((await cli('receipts', 'reissue', '99')).stderr, /batch 99 does not exist \(svc_not_found\)/);
  t.match(
    (await cli('receipts', 'reissue', String(batch - 1))).stderr,
    new RegExp(`batch ${batch - 1} has its receipt \\(svc_conflict\\)`),
  );
  const reissued = await cli('receipts', 'reissue', String(batch), '--json');
  t.equal(reissued.code, 0, reissued.stderr);
  const view = reissued.json<ReissueView>();
  t.match(view, { receipt: { batch, kid: saved.kid }, halted: null });
  t.not(view.receipt.root, saved.root, 'the rewritten batch has another root than the receipt saved before');
  t.not(view.receipt.refunds, saved.refunds);
  const audit = (await control.admin('GET', '/_admin/v1/audit')).body.entries[0];
  t.match(audit, { action: 'receipts.reissue', target: String(batch), actor: 'root', detail: { kid: saved.kid } });
  const changelog = (await control.request(`${control.urls.api}/api/v1/changelog`, { headers: { 'user-agent': SDK_UA } })).body.entries[0];
  t.equal(changelog.id, view.changelog_id);
  t.match(changelog.text, new RegExp(`^Settlement batch ${batch} had no receipt in the database; the operators signed it again`));
  t.match((await cli('receipts', 'reissue', String(batch))).stderr, /has its receipt/, 'once');

  // The halt is lifted: settlement goes on, and the chain verifies (from here on, the fork shows
  // only against a receipt saved before).
  t.match((await cli('settler', 'status', '--json')).json<SettlerStatus>(), { state: 'idle', halted: null });
  const resumed = await cli('settler', 'run-once', '--json');
  t.equal(resumed.code, 0, resumed.stderr);
  t.equal(resumed.json<{ batches: unknown[] }>().batches.length, 1);
  t.equal((await cli('ledger', 'verify')).code, 0);
  t.equal((await cli('receipts', 'verify', '--indexer', control.urls.indexer, '--jwks', pinned)).code, 0);
});

t.test('receipts reissue, text output: the halt stays while another batch lacks its receipt', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir, flags: FLAGS });
  await saveEndpoint(first.handle.ctx.store, 'ep', { price: 1000, premium: 100 });
  await first.handle.ctx.store.outcomes.ingest(
    Array.from({ length: 30 }, (_, i) => outcome({ outcome: 'ok', started: Date.now() - 1000 + i })),
    Date.now(),
  );
  t.equal((await runCli(['settler', 'run-once'], { control: first })).code, 0);
  await first.close();
  const db = new Database(join(dataDir, 'control.db'));
  db.exec(`DELETE FROM receipts WHERE batch >= 2`);
  db.close();

  const control = await startTestControl(t, { dataDir, flags: FLAGS });
  const cli = (...args: string[]) => runCli(args, { control });
  t.match((await cli('settler', 'status', '--json')).json<SettlerStatus>().halted, {
    batch: 2,
    batches_without_receipt: 2,
    reason: 'batch 2 is settled but has no receipt (2 settled batches have none)',
  });
  t.match((await cli('receipts', 'reissue', '3')).stderr, /batch 2 has no receipt either; reissue it first \(svc_conflict\)/);
  const second = await cli('receipts', 'reissue', '2');
  t.equal(second.code, 0, second.stderr);
  t.match(second.stdout, /^Batch 2 signed again with key \S+ \(root [0-9a-f]{64}, 10 calls\)\.$/m);
  t.match(second.stdout, /^Recorded in the audit log and the public changelog \(entry \d+\)\.$/m);
  t.match(second.stdout, /^The settler stays halted: batch 3 is settled but has no receipt\.$/m);
  const third = await cli('receipts', 'reissue', '3');
  t.match(third.stdout, /^Every settled batch has its receipt: the settler is not halted\.$/m);
  t.equal((await cli('ledger', 'verify')).code, 0, 'the same rows and key: the chain is whole again');
});
