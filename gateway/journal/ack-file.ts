/**
 * The outcome journal's ack cursor on disk (`acks.json` in the journal's dir): the segment and
 * byte offset of the first record not known to be acked, plus the ids acked out of order beyond
 * it. Always replaced atomically (temp file, fsync, rename): in the background after acks
 * (`AckFile.save`), blocking at close.
 */
import fs from 'node:fs';
import path from 'node:path';

const STATE_FILE = 'acks.json';
const STATE_TEMP = /^acks\.json(?:\.\d+)?\.tmp$/;

/** The ack cursor as stored: segment, byte offset, and ids acked beyond it. */
export interface AckState {
  seq: number;
  offset: number;
  acked: string[];
}

/** The stored ack cursor; a missing or unreadable file is the start of the journal. */
export function readAckState(dir: string): AckState {
  try {
    const state = JSON.parse(fs.readFileSync(path.join(dir, STATE_FILE), 'utf8')) as Record<string, unknown>;
    if (Number.isSafeInteger(state.seq) && Number.isSafeInteger(state.offset) && Array.isArray(state.acked)) {
      return {
        seq: state.seq as number,
        offset: state.offset as number,
        acked: state.acked.filter((x): x is string => typeof x === 'string'),
      };
    }
  } catch {
    /* missing or unreadable: everything on disk is replayed (control dedupes) */
  }
  return { seq: 0, offset: 0, acked: [] };
}

/** Remove temporary ack files a crash left behind. */
export function removeAckTemps(dir: string): void {
  for (const name of fs.readdirSync(dir)) if (STATE_TEMP.test(name)) fs.rmSync(path.join(dir, name), { force: true });
}

/** Replace the ack file atomically (temp file, fsync, rename), blocking. */
export function writeAckStateSync(dir: string, state: AckState): void {
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(state));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * Replace the ack file atomically off the event loop. `current()` is asked just before the
 * rename: a write that has been overtaken (by a newer write, or a blocking one at close) is
 * dropped instead of replacing newer state.
 */
export async function writeAckState(dir: string, state: AckState, generation: number, current: () => boolean): Promise<void> {
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.${generation}.tmp`;
  const handle = await fs.promises.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(state));
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (current()) await fs.promises.rename(tmp, file);
  else await fs.promises.rm(tmp, { force: true });
}

/** One journal's ack file: background writes never overlap and the newest wins; the last one blocks, at close. */
export class AckFile {
  private generation = 0;
  private writing = false;
  private again = false;
  private closed = false;
  /** Resolvers of `idle()` calls waiting for the background write to finish. */
  private idleWaiters: (() => void)[] = [];

  /** `state()` is the cursor to store; `failed()` counts a background write that failed (the next save retries). */
  constructor(
    private readonly dir: string,
    private readonly state: () => AckState,
    private readonly failed: () => void,
  ) {}

  /** Store the cursor in the background (after the write running now, if one is). */
  save(): void {
    if (this.closed) return;
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = true;
    const generation = ++this.generation;
    writeAckState(this.dir, this.state(), generation, () => generation === this.generation)
      .catch(() => this.failed())
      .finally(() => {
        this.writing = false;
        if (this.again) {
          this.again = false;
          this.save();
        }
        if (!this.writing && this.idleWaiters.length > 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
  }

  /** Store the cursor now, blocking; a background write still running can no longer replace it, and later saves do nothing. */
  close(): void {
    this.closed = true;
    this.generation++;
    writeAckStateSync(this.dir, this.state());
  }

  /** Resolves once no background write is running or queued. */
  idle(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
