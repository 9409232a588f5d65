/**
 * Worker thread of `TreeHasher`: hashes a batch's canonical leaves and computes their RFC 9162
 * tree while the settler's transaction runs its SQL on the main thread. Input: `{ seq,
 * leaves, out }`, the leaves joined by `\n` (canonical JSON never holds a raw line break) and
 * `out` a shared buffer for the result: the root, then the roots of the batch's runs of
 * `SUBTREE_HEIGHT` levels. Then `seq` goes into the state word, notified. The worker raises
 * the ready word once it listens; until then batches are hashed inline.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { InvariantError } from '../../protocol/coded-error';
import { treeOf } from '../../protocol/receipt-tree';

const shared = (workerData as { shared: SharedArrayBuffer }).shared;
/** [0] the last request answered, [1] 1 when it failed, [2] 1 once this worker is listening. */
const state = new Int32Array(shared, 0, 3);

parentPort!.on('message', (message: { seq: number; leaves: string; out: SharedArrayBuffer }) => {
  let failed = 0;
  try {
    const tree = treeOf(message.leaves.split('\n'));
    const out = Buffer.from(message.out);
    if (out.length !== 32 + tree.subtrees.length) throw new InvariantError('result buffer of the wrong size');
    out.write(tree.root, 0, 32, 'latin1');
    tree.subtrees.copy(out, 32);
  } catch {
    failed = 1;
  }
  Atomics.store(state, 1, failed);
  Atomics.store(state, 0, message.seq);
  Atomics.notify(state, 0);
});
Atomics.store(state, 2, 1);
