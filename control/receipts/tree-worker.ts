/**
 * Worker thread of `TreeHasher`: hashes a batch's canonical leaves and computes their RFC 9162
 * root while the settler's transaction runs its SQL on the main thread. Input: `{ seq,
 * leaves }` with the leaves joined by `\n` (canonical JSON never holds a raw line break).
 * Output: the root's 32 bytes in the shared buffer, then `seq` in the state word, notified.
 * It raises the ready word once it listens; until then batches are hashed inline.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { leafHash, rootOf } from '../../protocol/merkle';

const shared = (workerData as { shared: SharedArrayBuffer }).shared;
/** [0] the last request answered, [1] 1 when it failed, [2] 1 once this worker is listening. */
const state = new Int32Array(shared, 0, 3);
const root = Buffer.from(shared, 16, 32);

parentPort!.on('message', (message: { seq: number; leaves: string }) => {
  let failed = 0;
  try {
    root.write(rootOf(message.leaves.split('\n').map(leafHash)), 0, 32, 'latin1');
  } catch {
    failed = 1;
  }
  Atomics.store(state, 1, failed);
  Atomics.store(state, 0, message.seq);
  Atomics.notify(state, 0);
});
Atomics.store(state, 2, 1);
