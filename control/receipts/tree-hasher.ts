/**
 * RFC 9162 roots of settlement batches, computed on a second thread while the batch's SQL
 * runs. Settlement hashes every call twice (its leaf and, on average, one interior node);
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
import { leafHash, rootOf, toHex } from '../../protocol/merkle';

/**
 * How long a batch's root may take on the worker before it is computed inline instead (and
 * the worker dropped): this base plus {@link WORKER_TIMEOUT_PER_LEAF_MS} per leaf. Only a
 * worker that died mid-batch gets near it. @default 2000
 */
export const WORKER_TIMEOUT_MS = 2_000;
/** @default 0.02 (20 µs per leaf; hashing takes about 1 µs) */
export const WORKER_TIMEOUT_PER_LEAF_MS = 0.02;
/** Batches smaller than this are hashed inline: a round trip costs more than it saves. @default 64 */
export const INLINE_BELOW = 64;

/** A root being computed; `hex()` waits for it. */
export interface PendingRoot {
  hex(): string;
}

const inline = (leaves: readonly string[]): PendingRoot => {
  const root = toHex(rootOf(leaves.map(leafHash)));
  return { hex: () => root };
};

export class TreeHasher {
  private worker: Worker | null = null;
  /** Shared with the worker: see tree-worker.ts. */
  private readonly state: Int32Array | null = null;
  private readonly root: Buffer | null = null;
  private seq = 0;

  /** `workerFile`: the compiled worker; null hashes inline. @default tree-worker.js beside this module, when it exists */
  constructor(workerFile: string | null = TreeHasher.compiledWorker()) {
    if (workerFile === null) return;
    try {
      const shared = new SharedArrayBuffer(16 + 32);
      this.state = new Int32Array(shared, 0, 3);
      this.root = Buffer.from(shared, 16, 32);
      this.worker = new Worker(workerFile, { workerData: { shared }, execArgv: [] });
      this.worker.unref();
      this.worker.on('error', () => this.stopWorker());
      this.worker.on('exit', () => this.stopWorker());
    } catch {
      this.stopWorker();
    }
  }

  /** The compiled worker beside this module, or null (running from `.ts` sources). */
  static compiledWorker(): string | null {
    const file = join(__dirname, 'tree-worker.js');
    return __filename.endsWith('.js') && existsSync(file) ? file : null;
  }

  /** True once batches are hashed on the worker thread (it started and listens). */
  get threaded(): boolean {
    return this.worker !== null && Atomics.load(this.state!, 2) === 1;
  }

  /** Start computing the root of these canonical leaves (in leaf order). */
  start(leaves: readonly string[]): PendingRoot {
    const worker = this.worker;
    if (worker === null || leaves.length < INLINE_BELOW || !this.threaded) return inline(leaves);
    const seq = ++this.seq;
    try {
      worker.postMessage({ seq, leaves: leaves.join('\n') });
    } catch {
      this.stopWorker();
      return inline(leaves);
    }
    return { hex: () => this.wait(seq, leaves) };
  }

  close(): void {
    this.stopWorker();
  }

  private wait(seq: number, leaves: readonly string[]): string {
    const state = this.state!;
    const deadline = Date.now() + WORKER_TIMEOUT_MS + leaves.length * WORKER_TIMEOUT_PER_LEAF_MS;
    for (;;) {
      const done = Atomics.load(state, 0);
      if (done === seq) break;
      const left = deadline - Date.now();
      if (this.worker === null || left <= 0) {
        this.stopWorker();
        return inline(leaves).hex();
      }
      Atomics.wait(state, 0, done, Math.min(left, 1_000));
    }
    if (Atomics.load(state, 1) !== 0) {
      this.stopWorker();
      return inline(leaves).hex();
    }
    return this.root!.toString('hex');
  }

  private stopWorker(): void {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) void worker.terminate().catch(() => undefined);
  }
}
