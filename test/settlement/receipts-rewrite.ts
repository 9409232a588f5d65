/**
 * A batch rewritten after a checkpoint was saved, and re-signed with the operator's own signing
 * key, produces a history every chain verifier accepts (`svcctl receipts verify` passes): only
 * someone who looked before can tell. Three such witnesses catch it here, against control as a
 * process on a settled data dir:
 *
 * - `svcctl receipts verify --since-checkpoint FILE` with the checkpoint saved before: exit 1,
 *   naming the batch and both hashes;
 * - the SDK with a checkpoint store that verified a refund before: `verifyRefund` rejects with
 *   `svc_sdk_history_rewritten`, the batch and both hashes in the error's fields;
 * - the Atom feed saved before: its entry for the batch holds another hash than the served receipt.
 *
 * The same steps on an untouched copy (more batches settled after the checkpoint) pass, and
 * the stores move on to the new checkpoint.
 */
import t from 'tap';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey, sign } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  FileCheckpointStore,
  MemoryCheckpointStore,
  SVC_SDK_HISTORY_REWRITTEN,
  HistoryRewrittenError,
  SvcClient,
  SvcError,
  type Checkpoint,
} from 'svc-monitor-sdk';
import { Settler, PAUSED_META } from '../../control/settler/settler';
import { SqliteStore } from '../../control/store';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import { silentLogger } from '../../runtime/log';
import type { Outcome } from '../../protocol/outcome';
import { receiptHash, receiptSigningBytes, type ReceiptFields } from '../../protocol/receipts-verify';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { request, startControlProcess, svcctl } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

const T0 = Date.UTC(2030, 0, 1, 12);
const KINDS: Outcome[] = ['ok', 'server_error', 'ok', 'network_error', 'client_error', 'ok'];
const ENV = { SVC_SETTLER_CADENCE_MS: '3600000', SVC_CACHE_STATS_TTL_S: '1', SVC_CACHE_STATUS_TTL_S: '1' };

/** The hash each batch has in a saved `/receipts.atom`. */
function feedHashes(atom: string): Map<number, string> {
  return new Map(
    [...atom.matchAll(/<title type="text">Batch (\d+): receipt hash ([0-9a-f]{64})<\/title>/g)].map((m) => [Number(m[1]), m[2]!]),
  );
}

t.test('a batch rewritten and re-signed after a checkpoint is caught by everyone who saved one', async (t) => {
  const base = join(t.testdir(), 'base');
  const store = await SqliteStore.open(join(base, 'control.db'), { receiptsCore: makeReceipts });
  await saveEndpoint(store, 'a', { price: 2000, premium: 150 });
  await store.mutate({ actor: 'test', now: T0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000_000, T0, 'test', null));
  const records = Array.from({ length: 120 }, (_, i) => outcome({ endpoint_id: 'a', outcome: KINDS[i % KINDS.length]!, started: T0 + i }));
  await store.outcomes.ingest(records, T0);
  const settled = await (
    await Settler.open({ store, log: silentLogger, now: () => T0 + 60_000, cadenceMs: 3_600_000, batchCap: 40 })
  ).runOnce();
  t.equal(settled.batches.length, 3);
  // Calls received later and left for the next run; the settler is paused so only run-once settles them.
  await store.outcomes.ingest(
    Array.from({ length: 10 }, (_, i) => outcome({ endpoint_id: 'a', outcome: 'server_error', started: T0 + 100_000 + i })),
    Date.now() - 60_000, // received before the run-once below (which settles what was received until its own now)
  );
  await store.mutate({ actor: 'test', now: T0 }, { action: 'settler.pause' }, (tx) => tx.setMeta(PAUSED_META, 1));
  const failedCall = records[1]!.call_id; // a server_error of batch 1
  await store.close();

  // Look once: the checkpoint, the feed, and a refund verified by an agent with a checkpoint store.
  let control = await startControlProcess(t, { dataDir: base, env: ENV });
  let indexer = control.urls.indexer!;
  const checkpoint = (await request(indexer, '/api/receipts/checkpoint', { method: 'GET' })).body as Checkpoint;
  t.match(checkpoint, { v: 1, kind: 'checkpoint', batch: 3 });
  const checkpointFile = join(base, '..', 'checkpoint.json');
  writeFileSync(checkpointFile, JSON.stringify(checkpoint));
  const savedFeed = (await request(indexer, '/receipts.atom', { method: 'GET' })).text;
  t.equal(feedHashes(savedFeed).get(3), checkpoint.hash, "the feed's entry for batch 3 holds the checkpoint's hash");
  const agentFile = join(base, '..', 'agent-checkpoint.json');
  const agent = new SvcClient({ indexerUrl: indexer, checkpointStore: new FileCheckpointStore(agentFile) });
  t.ok((await agent.verifyRefund(failedCall)).ok, "the agent's refund verifies");
  t.same(JSON.parse(readFileSync(agentFile, 'utf8')), checkpoint, 'and its store saved the checkpoint it verified');
  const same = await svcctl(['receipts', 'verify', '--indexer', indexer, '--since-checkpoint', checkpointFile]);
  t.equal(same.code, 0, same.stderr);
  t.match(same.stdout, /Receipts consistent: .* batch 3 unchanged, up to batch 3, .* \(3 receipts from batch 1/);
  await control.stop();

  // An untouched copy moves on: batch 4 settles after the checkpoint and everything agrees.
  const honest = join(base, '..', 'honest');
  cpSync(base, honest, { recursive: true });
  control = await startControlProcess(t, { dataDir: honest, env: ENV });
  indexer = control.urls.indexer!;
  t.equal((await svcctl(['--data-dir', honest, 'settler', 'run-once'])).code, 0);
  const moved = await svcctl(['receipts', 'verify', '--indexer', indexer, '--since-checkpoint', checkpointFile, '--json']);
  t.equal(moved.code, 0, moved.stderr);
  t.match(JSON.parse(moved.stdout), { ok: true, from: 3, to: 4, receipts: 4, checkpoint: { batch: 4 }, reason: null, failure: null });
  const honestStore = new MemoryCheckpointStore(checkpoint);
  const honestAgent = new SvcClient({ indexerUrl: indexer, checkpointStore: honestStore });
  t.ok((await honestAgent.verifyRefund(failedCall)).ok);
  t.match(await honestStore.load(), { batch: 4 }, 'the store moved on to batch 4');
  t.match(await honestAgent.verifyConsistency(checkpoint), { batch: 4 }, 'verifyConsistency resolves the served checkpoint');
  await control.stop();

  // The rewrite: batch 3's receipt edited in the database and re-signed with the operator's own key.
  const db = new Database(join(base, 'control.db'));
  const row = db
    .prepare(`SELECT batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig FROM receipts WHERE batch = 3`)
    .get() as ReceiptFields;
  const rewritten = { ...row, root: 'ab'.repeat(32) };
  const key = createPrivateKey(readFileSync(join(base, RECEIPT_KEY_FILE), 'utf8'));
  rewritten.sig = sign(null, receiptSigningBytes(rewritten), key).toString('base64url');
  db.prepare(`UPDATE receipts SET root = ?, sig = ? WHERE batch = 3`).run(rewritten.root, rewritten.sig);
  db.close();
  const newHash = receiptHash(rewritten);
  t.not(newHash, checkpoint.hash);

  control = await startControlProcess(t, { dataDir: base, env: ENV });
  indexer = control.urls.indexer!;
  t.equal((await svcctl(['--data-dir', base, 'settler', 'run-once'])).code, 0, 'batch 4 settles, chained to the rewritten batch 3');
  const walk = await svcctl(['receipts', 'verify', '--indexer', indexer]);
  t.equal(walk.code, 0, 'the whole chain still verifies: without a checkpoint, nobody can tell');

  // 1. svcctl with the saved checkpoint.
  const caught = await svcctl(['receipts', 'verify', '--indexer', indexer, '--since-checkpoint', checkpointFile]);
  t.equal(caught.code, 1);
  t.match(
    caught.stderr,
    `receipts verify failed: batch 3 is not the one the saved checkpoint states: its hash was ${checkpoint.hash}, the served receipt's is ${newHash}`,
  );
  const caughtJson = await svcctl(['receipts', 'verify', '--indexer', indexer, '--since-checkpoint', checkpointFile, '--json']);
  t.match(JSON.parse(caughtJson.stdout), {
    ok: false,
    from: 3,
    to: 4,
    batch: 3,
    expected: checkpoint.hash,
    served: newHash,
    failure: 'saved_checkpoint_mismatch',
  });

  // 2. The SDK with its store (a new process of the agent: the file is what it remembers).
  const again = new SvcClient({ indexerUrl: indexer, checkpointStore: new FileCheckpointStore(agentFile) });
  const err = await again.verifyRefund(failedCall).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, SvcError);
  t.type(err, HistoryRewrittenError);
  t.match(err, { code: SVC_SDK_HISTORY_REWRITTEN, batch: 3, checkpointHash: checkpoint.hash, servedHash: newHash });
  t.match((err as SvcError).problem, { batch: 3, checkpoint_hash: checkpoint.hash, served_hash: newHash });
  t.same(JSON.parse(readFileSync(agentFile, 'utf8')), checkpoint, 'the store keeps the checkpoint it trusted');
  const plain = new SvcClient({ indexerUrl: indexer });
  t.ok((await plain.verifyRefund(failedCall)).ok, 'without a store the refund still verifies: the store is what remembers');
  await t.rejects(plain.verifyConsistency(checkpoint), { code: SVC_SDK_HISTORY_REWRITTEN, batch: 3 });

  // 3. The feed saved before.
  const served = (await request(indexer, '/api/receipts/3', { method: 'GET' })).body as ReceiptFields;
  t.equal(receiptHash(served), newHash);
  t.not(feedHashes(savedFeed).get(3), receiptHash(served), "the saved feed's hash for batch 3 is not the served receipt's");
  t.equal(
    feedHashes((await request(indexer, '/receipts.atom', { method: 'GET' })).text).get(3),
    newHash,
    'the feed served now shows the new one',
  );
  await control.stop();
});
