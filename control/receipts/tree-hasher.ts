/**
 * The Merkle trees of settlement batches (root and stored run roots, `tree.ts`), computed on
 * a second thread while the batch's SQL runs. Settlement hashes every call twice (its leaf and, on average, one interior node);
 * done inline that is most of what receipts cost the settler, done here it overlaps with the
 * batch's row updates and ledger writes, which take longer. The settler's transaction is
 * synchronous, so the result is awaited with `Atomics.wait` on a shared word: the batch is
 * still committed whole, in one transaction, with its receipt.
 *
 * Anything unexpected (no compiled worker, as when running from TypeScript sources, a worker
 * that is not listening yet, fails to start, errs or does not answer in time) falls back to
 * hashing on the calling thread, for that batch (and, once the worker failed, every later
 * one): same bytes, same root.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { toHex } from '../../protocol/merkle';
import { subtreeCount, treeOf, type BatchTree } from '../../protocol/receipt-tree';
import type { PendingTree, StoredTree } from '../store/receipts';

/**
 * How long a batch's tree may take on the worker before it is computed inline instead (and
 * the worker dropped): this base plus {@link WORKER_TIMEOUT_PER_LEAF_MS} per leaf. Only a
 * worker that died mid-batch gets near it. @default 2000
 */
export const WORKER_TIMEOUT_MS = 2_000;
/** @default 0.02 (20 µs per leaf; hashing takes about 1 µs) */
export const WORKER_TIMEOUT_PER_LEAF_MS = 0.02;
/** Batches smaller than this are hashed inline: a round trip costs more than it saves. @default 64 */
export const INLINE_BELOW = 64;

const stored = (tree: BatchTree): StoredTree => ({ root: toHex(tree.root), subtrees: tree.subtrees });
const inline = (leaves: readonly string[]): PendingTree => {
  const tree = stored(treeOf(leaves));
  return { result: () => tree };
};

export class TreeHasher {
  /** The worker to start on first use; null once it was started, failed or closed. */
  private pendingFile: string | null;
  private worker: Worker | null = null;
  /** Shared with the worker: see tree-worker.ts. */
  private readonly state = new Int32Array(new SharedArrayBuffer(12), 0, 3);
  private seq = 0;

  /**
   * `workerFile`: the compiled worker, started on the first batch large enough to use it
   * (so a store that never settles runs no thread); null hashes inline.
   * @default tree-worker.js beside this module, when it exists
   */
  constructor(workerFile: string | null = TreeHasher.compiledWorker()) {
    this.pendingFile = workerFile;
  }

  /** The compiled worker beside this module, or null (running from `.ts` sources). */
  static compiledWorker(): string | null {
    const file = join(__dirname, 'tree-worker.js');
    return __filename.endsWith('.js') && existsSync(file) ? file : null;
  }

  /** True once batches are hashed on the worker thread (it started and listens). */
  get threaded(): boolean {
    return this.worker !== null && Atomics.load(this.state, 2) === 1;
  }

  /** Start the worker now rather than on the first large batch (tests, warm-up). */
  warm(): this {
    const file = this.pendingFile;
    this.pendingFile = null;
    if (file === null) return this;
    try {
      this.worker = new Worker(file, { workerData: { shared: this.state.buffer }, execArgv: [] });
      this.worker.unref();
      this.worker.on('error', () => this.stopWorker());
      this.worker.on('exit', () => this.stopWorker());
    } catch {
      this.stopWorker();
    }
    return this;
  }

  /** Start computing the tree of these canonical leaves (in leaf order). */
  start(leaves: readonly string[]): PendingTree {
    if (leaves.length < INLINE_BELOW) return inline(leaves);
    if (this.pendingFile !== null) this.warm(); // this batch inline; later ones on the worker once it listens
    const worker = this.worker;
    if (worker === null || !this.threaded) return inline(leaves);
    const seq = ++this.seq;
    const out = new SharedArrayBuffer(32 + 32 * subtreeCount(leaves.length));
    try {
      worker.postMessage({ seq, leaves: leaves.join('\n'), out });
    } catch {
      this.stopWorker();
      return inline(leaves);
    }
    return { result: () => this.wait(seq, leaves, out) };
  }

  close(): void {
    this.pendingFile = null;
    this.stopWorker();
  }

  private wait(seq: number, leaves: readonly string[], out: SharedArrayBuffer): StoredTree {
    const state = this.state;
    const deadline = Date.now() + WORKER_TIMEOUT_MS + leaves.length * WORKER_TIMEOUT_PER_LEAF_MS;
    for (;;) {
      const done = Atomics.load(state, 0);
      if (done === seq) break;
      const left = deadline - Date.now();
      if (this.worker === null || left <= 0) {
        this.stopWorker();
        return inline(leaves).result();
      }
      Atomics.wait(state, 0, done, Math.min(left, 1_000));
    }
    if (Atomics.load(state, 1) !== 0) {
      this.stopWorker();
      return inline(leaves).result();
    }
    const bytes = Buffer.from(out);
    return { root: bytes.toString('hex', 0, 32), subtrees: Buffer.from(bytes.subarray(32)) };
  }

  private stopWorker(): void {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) void worker.terminate().catch(() => undefined);
  }
}
