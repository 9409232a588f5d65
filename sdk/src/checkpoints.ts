/**
 * Checkpoints of the receipt chain, remembered between runs: a client given a
 * `checkpointStore` checks, on every `verifyRefund`, that the history the indexer serves now
 * leads from batch 1 through the last checkpoint it verified to the served one (the first run,
 * with nothing saved, walks the served checkpoint's own history), then saves the new one. A
 * batch rewritten (and re-signed) after a checkpoint was saved no longer hashes to it, and one
 * changed or swapped before it breaks a signature or a `prev`: `SvcError`
 * `svc_sdk_history_rewritten`, with the failed check, the batch and both hashes. The walk from
 * batch 1 is done once per client: for the checkpoint it verified last itself (kept in memory,
 * not in the store), it starts at that checkpoint's batch (`SvcClient.verifyConsistency`).
 *
 * ```ts
 * const svc = new SvcClient({ indexerUrl, checkpointStore: new FileCheckpointStore('svc-checkpoint.json') });
 * ```
 *
 * The check itself is `verifyConsistency` of the generated receipt verifier, the one
 * `svcctl receipts verify --since-checkpoint` runs.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { SVC_SDK_HISTORY_REWRITTEN } from './codes';
import { SvcError } from './errors';
import type { ConsistencyFailure, ConsistencyVerdict } from './generated/receipts-consistency';
import type { Checkpoint } from './generated/wire';

/** Where a client keeps the last checkpoint it verified. Both methods may be asynchronous. */
export interface CheckpointStore {
  /** The last checkpoint saved, or null before the first. */
  load(): Promise<Checkpoint | null>;
  save(checkpoint: Checkpoint): Promise<void>;
}

/** A checkpoint kept as JSON in one file (written to a temp file and renamed, so it is always whole). */
export class FileCheckpointStore implements CheckpointStore {
  readonly path: string;

  constructor(path: string) {
    if (typeof path !== 'string' || path.length === 0) throw new TypeError('FileCheckpointStore needs a file path');
    this.path = path;
  }

  async load(): Promise<Checkpoint | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return JSON.parse(text) as Checkpoint;
  }

  async save(checkpoint: Checkpoint): Promise<void> {
    const tmp = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, `${JSON.stringify(checkpoint)}\n`, { mode: 0o600 });
      await rename(tmp, this.path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }
}

/** A checkpoint kept in memory: for one process, and for tests. */
export class MemoryCheckpointStore implements CheckpointStore {
  #checkpoint: Checkpoint | null;

  constructor(checkpoint: Checkpoint | null = null) {
    this.#checkpoint = checkpoint;
  }

  load(): Promise<Checkpoint | null> {
    return Promise.resolve(this.#checkpoint);
  }

  save(checkpoint: Checkpoint): Promise<void> {
    this.#checkpoint = checkpoint;
    return Promise.resolve();
  }
}

/** `SvcError` `svc_sdk_history_rewritten`: where the served history parts from a saved checkpoint. */
export class HistoryRewrittenError extends SvcError {
  /** The check that failed (`receipt_signature`, `receipt_link`, `saved_checkpoint_mismatch`, …; null when none ran). */
  readonly failure: ConsistencyFailure | null;
  /** The batch where the histories part (null when none can be named). */
  readonly batch: number | null;
  /** The hash the saved checkpoint (or the chain before it) holds for that batch. */
  readonly checkpointHash: string | null;
  /** The hash of what the indexer serves for it now (null when it serves nothing). */
  readonly servedHash: string | null;

  constructor(verdict: ConsistencyVerdict) {
    const detail = verdict.reason ?? 'the served history does not extend the saved checkpoint';
    super(
      {
        type: `https://svc.dev/errors#${SVC_SDK_HISTORY_REWRITTEN}`,
        title: 'Receipt history rewritten',
        status: 0,
        detail,
        code: SVC_SDK_HISTORY_REWRITTEN,
        failure: verdict.failure,
        batch: verdict.batch,
        checkpoint_hash: verdict.expected,
        served_hash: verdict.served,
      },
      { headers: {}, callId: null, attempts: 1, status: 0 },
    );
    this.failure = verdict.failure;
    this.batch = verdict.batch;
    this.checkpointHash = verdict.expected;
    this.servedHash = verdict.served;
  }
}
