/**
 * TreeHasher (control/receipts/tree-hasher.ts): batch trees computed on the compiled worker
 * thread (root and the run roots of 64 leaves) equal the inline RFC 9162 ones for every size
 * around its thresholds; a worker that never starts, answers with a failure, or stops
 * answering is replaced by inline hashing with the same result.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { INLINE_BELOW, TreeHasher } from '../../control/receipts/tree-hasher';
import { leafHash, rootOf, subtreeRoots, toHex } from '../../protocol/merkle';
import { leafCanonical } from '../../protocol/receipts-verify';
import { waitFor } from '../fixtures/stack';

const COMPILED = resolve(__dirname, '..', '..', 'dist', 'control', 'receipts', 'tree-worker.js');

const leavesOf = (n: number): string[] =>
  Array.from({ length: n }, (_, i) =>
    leafCanonical({
      batch: 7,
      call_id: `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
      provider: 'prv_x',
      outcome: i % 4 ? 'ok' : 'server_error',
      premium: i % 4 ? 150 : 0,
      refund: i % 4 ? 0 : 2150,
      clamp: null,
    }),
  );
const inlineRoot = (leaves: string[]) => toHex(rootOf(leaves.map(leafHash)));
const inlineRuns = (leaves: string[]) => subtreeRoots(leaves.map(leafHash), 6).map(toHex);
const runsOf = (b: Buffer) => Array.from({ length: b.length / 32 }, (_, i) => b.toString('hex', i * 32, i * 32 + 32));

/** Whether the worker listens, once it is decided: it listens, or it is gone (failed to start, exited). */
async function ready(hasher: TreeHasher): Promise<boolean> {
  await waitFor(() => hasher.threaded || hasher['worker'] === null, 'the worker listening or gone');
  return hasher.threaded;
}

t.test('the worker thread computes the same roots as inline hashing', async (t) => {
  const hasher = new TreeHasher(COMPILED).warm();
  t.teardown(() => hasher.close());
  t.ok(await ready(hasher), 'the compiled worker starts and listens');
  for (const n of [1, 2, INLINE_BELOW - 1, INLINE_BELOW, INLINE_BELOW + 1, 1000, 4097]) {
    const leaves = leavesOf(n);
    const tree = hasher.start(leaves).result();
    t.equal(tree.root, inlineRoot(leaves), `${n} leaves: root`);
    t.same(runsOf(tree.subtrees), inlineRuns(leaves), `${n} leaves: ${Math.ceil(n / 64)} run roots`);
  }
  // Two roots in flight one after the other keep their own answers.
  const a = leavesOf(300);
  const b = leavesOf(301);
  const pa = hasher.start(a);
  t.equal(pa.result().root, inlineRoot(a));
  const pb = hasher.start(b);
  t.equal(pb.result().root, inlineRoot(b));
  t.ok(hasher.threaded, 'still on the worker');
});

t.test('without a usable worker, roots are computed inline', async (t) => {
  const dir = t.testdir();
  const leaves = leavesOf(200);

  const none = new TreeHasher(null);
  t.equal(none.threaded, false);
  t.equal(none.start(leaves).result().root, inlineRoot(leaves), 'no worker');

  const missing = new TreeHasher(join(dir, 'nowhere.js')).warm();
  t.teardown(() => missing.close());
  t.equal(await ready(missing), false, 'a worker file that does not exist never listens');
  t.equal(missing.start(leaves).result().root, inlineRoot(leaves));

  mkdirSync(join(dir, 'w'));
  const failing = join(dir, 'w', 'failing.js');
  writeFileSync(
    failing,
    `const { parentPort, workerData } = require('node:worker_threads');
     const s = new Int32Array(workerData.shared, 0, 3);
     parentPort.on('message', (m) => { Atomics.store(s, 1, 1); Atomics.store(s, 0, m.seq); Atomics.notify(s, 0); });
     Atomics.store(s, 2, 1);`,
  );
  const failed = new TreeHasher(failing).warm();
  t.teardown(() => failed.close());
  t.ok(await ready(failed));
  t.equal(failed.start(leaves).result().root, inlineRoot(leaves), 'a worker reporting a failure');
  t.equal(failed.threaded, false, 'and it is not asked again');

  const silent = join(dir, 'w', 'silent.js');
  writeFileSync(
    silent,
    `const { parentPort, workerData } = require('node:worker_threads');
     parentPort.on('message', () => {});
     Atomics.store(new Int32Array(workerData.shared, 0, 3), 2, 1);`,
  );
  const mute = new TreeHasher(silent).warm();
  t.teardown(() => mute.close());
  t.ok(await ready(mute));
  t.equal(
    mute.start(leavesOf(INLINE_BELOW)).result().root,
    inlineRoot(leavesOf(INLINE_BELOW)),
    'a worker that never answers (after its timeout)',
  );
  t.equal(mute.threaded, false);

  const lazy = new TreeHasher(COMPILED);
  t.teardown(() => lazy.close());
  t.equal(lazy.threaded, false, 'no thread before the first batch');
  t.equal(lazy.start(leaves).result().root, inlineRoot(leaves), 'the first batch is hashed inline while the worker starts');
  t.ok(await ready(lazy), 'then the worker listens');
  t.equal(lazy.start(leaves).result().root, inlineRoot(leaves));

  const closed = new TreeHasher(COMPILED).warm();
  t.ok(await ready(closed));
  closed.close();
  t.equal(closed.start(leaves).result().root, inlineRoot(leaves), 'after close');
});
