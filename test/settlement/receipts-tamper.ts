/**
 * Tampering with a copy of a settled database is caught, and the damaged batch is named.
 * A data dir is settled once (several batches, two endpoints); each case copies it, edits
 * the copy with SQL as an operator with file access could, starts control on the copy, and
 * runs `svcctl ledger verify` and `svcctl receipts verify` (public reads only):
 *
 * | edit | ledger verify | receipts verify |
 * |---|---|---|
 * | one call's refund | batch N does not match its calls | (receipts intact) the call's proof fails |
 * | a batch's refund total | batch N does not match its calls | the receipts' sum is not the indexer's total |
 * | two calls' outcomes and amounts swapped, batch and ledger consistent | batch N's root is not its calls' root | (receipts intact) both proofs fail |
 * | a receipt deleted | batch N has no receipt | batch N: no receipt |
 * | a receipt's root edited | batch N: signature | batch N: signature |
 * | a receipt re-signed with an unknown key | batch N: key not published | batch N: key not in the JWKS |
 * | …and that key published too | batch N+1: prev does not link | the same; a JWKS pinned before names batch N |
 */
import t from 'tap';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPairSync, sign } from 'node:crypto';
import Database from 'better-sqlite3';
import { Settler } from '../../control/settler/settler';
import { SqliteStore } from '../../control/store';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import { silentLogger } from '../../runtime/log';
import type { Outcome } from '../../protocol/outcome';
import { jwkThumbprint, receiptSigningBytes, verifyCallProof, type ReceiptFields } from '../../protocol/receipts-verify';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { request, startControlProcess, svcctl } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

const T0 = Date.UTC(2030, 0, 1, 12);
const KINDS: Outcome[] = ['ok', 'server_error', 'ok', 'network_error', 'client_error', 'ok'];

t.test('tampering with a settled database is detected and the batch named', async (t) => {
  const base = join(t.testdir(), 'base');
  // A SQLite store: the cases below edit copies of its file.
  const store = await SqliteStore.open(join(base, 'control.db'), { receiptsCore: makeReceipts });
  await saveEndpoint(store, 'a', { price: 2000, premium: 150 });
  await saveEndpoint(store, 'b', { price: 1000, premium: 100 });
  await store.mutate({ actor: 'test', now: T0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000_000, T0, 'test', null));
  const records = Array.from({ length: 300 }, (_, i) =>
    outcome({
      endpoint_id: i % 2 ? 'a' : 'b',
      outcome: KINDS[i % KINDS.length]!,
      key_id: `key_${Math.floor(i / 12) % 3}`,
      started: T0 + i,
    }),
  );
  await store.outcomes.ingest(records, T0);
  const settled = await (
    await Settler.open({ store, log: silentLogger, now: () => T0 + 60_000, cadenceMs: 3_600_000, batchCap: 50 })
  ).runOnce();
  t.equal(settled.batches.length, 6);
  const target = 3;
  // Two calls of batch 3 with the same key: a refunded failure and a premium-paying ok.
  const batchCalls = store.db
    .prepare(
      `SELECT call_id, key_id, outcome, premium, refund, refund_owed FROM outcomes WHERE settled_batch = ? ORDER BY received_at, call_id`,
    )
    .all(target) as { call_id: string; key_id: string; outcome: Outcome; premium: number; refund: number; refund_owed: number }[];
  const failed = batchCalls.find((c) => c.outcome === 'server_error')!;
  const paid = batchCalls.find((c) => c.outcome === 'ok' && c.key_id === failed.key_id)!;
  t.ok(failed && paid, 'batch 3 has a refunded and a premium call of one key');
  const published = await store.receipts.jwks();
  await store.close();

  let n = 0;
  /** Copy the data dir, edit the copy, start control on it; both verifiers' results. */
  const tampered = async (edit: (db: Database.Database) => void) => {
    const dir = join(base, '..', `copy-${++n}`);
    mkdirSync(dir);
    copyFileSync(join(base, 'control.db'), join(dir, 'control.db'));
    copyFileSync(join(base, RECEIPT_KEY_FILE), join(dir, RECEIPT_KEY_FILE));
    const db = new Database(join(dir, 'control.db'));
    db.pragma('foreign_keys = OFF');
    edit(db);
    db.close();
    const control = await startControlProcess(t, { dataDir: dir });
    const indexer = control.urls.indexer!;
    const ledger = await svcctl(['--data-dir', dir, 'ledger', 'verify']);
    const receipts = await svcctl(['receipts', 'verify', '--indexer', indexer]);
    const proof = async (callId: string) => {
      const res = await request(indexer, `/api/calls/${callId}/proof`, { method: 'GET' });
      return verifyCallProof(res.body, published, callId);
    };
    return { dir, indexer, ledger, receipts, proof, stop: () => control.stop() };
  };

  await t.test('untouched: both verifiers pass', async (t) => {
    const r = await tampered(() => undefined);
    t.equal(r.ledger.code, 0, r.ledger.stderr);
    t.equal(r.receipts.code, 0, r.receipts.stderr);
    t.match(r.receipts.stdout, /Receipts OK: 6 receipts/);
    t.equal((await r.proof(failed.call_id)).ok, true);
    await r.stop();
  });

  await t.test("one ledger row's refund changed", async (t) => {
    const r = await tampered((db) =>
      db.prepare(`UPDATE settled_calls SET refund = refund - 1, refund_owed = refund_owed - 1 WHERE call_id = ?`).run(failed.call_id),
    );
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 3 does not match the calls settled in it/);
    t.equal(r.receipts.code, 0, 'the receipts themselves are intact');
    const v = await r.proof(failed.call_id);
    t.equal(v.ok, false, "the call's proof no longer verifies");
    t.match(v.reasons.join(' '), /do not lead to the receipt's root/);
    await r.stop();
  });

  await t.test('two calls rewritten, batch and ledger kept consistent: only the root shows it', async (t) => {
    const r = await tampered((db) => {
      const record = db.prepare(`UPDATE outcome_records SET outcome = ?, status = ? WHERE call_id = ?`);
      const settled = db.prepare(`UPDATE settled_calls SET outcome = ?, premium = ?, refund = ?, refund_owed = ? WHERE call_id = ?`);
      record.run(paid.outcome, 200, failed.call_id);
      settled.run(paid.outcome, paid.premium, paid.refund, paid.refund_owed, failed.call_id);
      record.run(failed.outcome, 500, paid.call_id);
      settled.run(failed.outcome, failed.premium, failed.refund, failed.refund_owed, paid.call_id);
    });
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 3: its receipt's root [0-9a-f]{64} is not the root of its 50 calls/);
    t.equal(r.receipts.code, 0, 'the receipts themselves are intact');
    t.equal((await r.proof(failed.call_id)).ok, false, 'the failed call can no longer prove its refund as recorded now');
    t.equal((await r.proof(paid.call_id)).ok, false);
    await r.stop();
  });

  await t.test("a batch's refund total raised (what the indexer reports)", async (t) => {
    const r = await tampered((db) =>
      db.prepare(`UPDATE settlement_batches SET refunds = refunds + 1000, refunds_owed = refunds_owed + 1000 WHERE id = ?`).run(target),
    );
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 3 does not match the calls settled in it/);
    t.equal(r.receipts.code, 1, 'the receipts no longer add up to the indexer');
    t.match(r.receipts.stderr, /receipts verify failed: the receipts' refunds sum to \d+, the indexer's total_refunds is \d+/);
    await r.stop();
  });

  await t.test('a receipt deleted', async (t) => {
    const r = await tampered((db) => db.prepare(`DELETE FROM receipts WHERE batch = ?`).run(target));
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 3 has no receipt/);
    t.equal(r.receipts.code, 1);
    t.match(r.receipts.stderr, /receipts verify failed: batch 3: no receipt \(the chain goes from batch 2 to 4\)/);
    await r.stop();
  });

  const otherRoot = 'ab'.repeat(32);
  await t.test("a receipt's root edited", async (t) => {
    const r = await tampered((db) => db.prepare(`UPDATE receipts SET root = ? WHERE batch = ?`).run(otherRoot, target));
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 3: the signature does not verify under key/);
    t.equal(r.receipts.code, 1);
    t.match(r.receipts.stderr, /receipts verify failed: batch 3: the signature does not verify under key/);
    await r.stop();
  });

  const stranger = generateKeyPairSync('ed25519');
  const x = stranger.publicKey.export({ format: 'jwk' }).x!;
  const kid = jwkThumbprint(x);
  const resign = (db: Database.Database) => {
    const r = db.prepare(`SELECT * FROM receipts WHERE batch = ?`).get(target) as ReceiptFields;
    const unsigned = { ...r, root: otherRoot, kid };
    const sig = sign(null, receiptSigningBytes(unsigned), stranger.privateKey).toString('base64url');
    db.prepare(`UPDATE receipts SET root = ?, kid = ?, sig = ? WHERE batch = ?`).run(otherRoot, kid, sig, target);
  };

  await t.test('a receipt re-signed with an unknown key', async (t) => {
    const r = await tampered(resign);
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, new RegExp(`ledger verify failed: batch 3: signed by key ${kid}, which is not in the JWKS`));
    t.equal(r.receipts.code, 1);
    t.match(r.receipts.stderr, new RegExp(`receipts verify failed: batch 3: signed by key ${kid}, which is not in the JWKS`));
    await r.stop();
  });

  await t.test('…and that key published as well: the next link breaks; a pinned JWKS names the batch', async (t) => {
    const r = await tampered((db) => {
      resign(db);
      db.prepare(`INSERT INTO receipt_keys (kid, x, created_at) VALUES (?, ?, ?)`).run(kid, x, T0);
    });
    t.equal(r.ledger.code, 1);
    t.match(r.ledger.stderr, /ledger verify failed: batch 4: prev does not link to the chain \(it is not the hash of receipt 3\)/);
    t.equal(r.receipts.code, 1);
    t.match(r.receipts.stderr, /receipts verify failed: batch 4: prev does not link/);
    const pinned = join(r.dir, 'pinned.jwks.json');
    writeFileSync(pinned, JSON.stringify(published));
    const withPinned = await svcctl(['receipts', 'verify', '--indexer', r.indexer, '--jwks', pinned]);
    t.equal(withPinned.code, 1);
    t.match(withPinned.stderr, new RegExp(`receipts verify failed: batch 3: signed by key ${kid}, which is not in the JWKS`));
    await r.stop();
  });
});
