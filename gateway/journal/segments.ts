/**
 * The outcome journal's segment files (`outcomes-<seq>.jsonl` in its dir): the ones earlier
 * processes left (a torn last line truncated away), the active one this process appends to,
 * fsync (on every write, or in the background), a new segment once the active one is full, and
 * deleting segments once every record in them is acked. Which records are acked is `journal.ts`'s.
 *
 * Only appends run on the event loop. The last sync and close of a full segment and the unlink
 * of an acked one run on the thread pool (`idle()` waits for them): unlinking an 8 MiB file
 * took ~5 ms on ext4, syncing a full one ~2 ms, every couple of seconds under load, with every
 * call in flight waiting. A full segment's sync is as durable as the background one: at most
 * the last `fsyncIntervalMs` of records are not on disk yet, and they are still in memory and
 * unacked. A crash before an unlink leaves an acked segment behind; `load` deletes it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { scanLines } from './journal-file';

const SEGMENT_NAME = /^outcomes-(\d{12})\.jsonl$/;

const segmentName = (seq: number): string => `outcomes-${String(seq).padStart(12, '0')}.jsonl`;

export interface Segment {
  seq: number;
  file: string;
  bytes: number;
}

export class Segments {
  /** Oldest first; the last one is the active segment once `openNext` ran. */
  readonly list: Segment[] = [];
  private fd = -1;
  private dirty = false;
  private syncing = false;
  private timer: NodeJS.Timeout | null = null;
  /** Syncs, closes and unlinks running on the thread pool. */
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly syncEveryWrite: boolean,
  ) {}

  /**
   * Take the segments in the dir, oldest first; those before `fromSeq` are acked (their unlink
   * was interrupted) and deleted. Returns the bytes of torn last lines truncated away.
   */
  load(fromSeq: number): number {
    let torn = 0;
    const found = fs
      .readdirSync(this.dir)
      .map((name) => SEGMENT_NAME.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    for (const seq of found) {
      const file = path.join(this.dir, segmentName(seq));
      if (seq < fromSeq) {
        fs.rmSync(file, { force: true }); // acked; its unlink was interrupted
        continue;
      }
      const size = fs.statSync(file).size;
      const end = scanLines(file, 0, () => true);
      if (end < size) {
        fs.truncateSync(file, end);
        torn += size - end;
      }
      this.list.push({ seq, file, bytes: end });
    }
    return torn;
  }

  /** Start appending to a new segment `seq`, after every other one. */
  openNext(seq: number): void {
    const file = path.join(this.dir, segmentName(seq));
    const fd = fs.openSync(file, 'a', 0o600);
    this.list.push({ seq, file, bytes: fs.fstatSync(fd).size });
    this.fd = fd;
  }

  /** Sync written records every `intervalMs` (group commit), unless every write syncs. */
  syncInBackground(intervalMs: number): void {
    if (this.syncEveryWrite) return;
    this.timer = setInterval(() => this.backgroundSync(), intervalMs);
    this.timer.unref();
  }

  get active(): Segment {
    return this.list.at(-1)!;
  }

  /** Append `bytes` bytes of `data` from `at` to the active segment, all of them; on failure nothing of it stays. */
  write(data: Uint8Array, at: number, bytes: number): void {
    try {
      for (let written = 0; written < bytes;) written += fs.writeSync(this.fd, data, at + written, bytes - written);
    } catch (err) {
      try {
        fs.ftruncateSync(this.fd, this.active.bytes); // never leave half a line for the next one
      } catch {
        /* the original error is the one to report */
      }
      throw err;
    }
  }

  /** After a write of `bytes`: sync it (or leave it to the background), and start a new segment if this one is full. True if it did. */
  wrote(bytes: number): boolean {
    const active = this.active;
    active.bytes += bytes;
    if (this.syncEveryWrite) fs.fdatasyncSync(this.fd);
    else this.dirty = true;
    if (active.bytes < this.maxBytes) return false;
    const full = this.fd;
    this.openNext(active.seq + 1);
    this.inBackground(async () => {
      // An error means the same as one of the background sync's: the records are still in memory, unacked.
      if (!this.syncEveryWrite) await new Promise<void>((resolve) => fs.fdatasync(full, () => resolve()));
      await new Promise<void>((resolve) => fs.close(full, () => resolve()));
    });
    return true;
  }

  /** fsync the active segment now. */
  sync(): void {
    fs.fdatasyncSync(this.fd);
    this.dirty = false;
  }

  /** Stop the background sync. */
  stopSync(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  /** Close the active segment (after `stopSync` and `sync`). */
  close(): void {
    fs.closeSync(this.fd);
  }

  /** Delete the segments wholly before segment `seq` (in the background); never the active one. */
  dropBefore(seq: number): void {
    while (this.list.length > 1 && this.list[0]!.seq < seq) {
      const file = this.list.shift()!.file;
      this.inBackground(() => fs.promises.rm(file, { force: true }).catch(() => undefined)); // left behind: `load` deletes it
    }
  }

  /** Resolves once every sync, close and unlink started so far has finished. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  private inBackground(work: () => Promise<void>): void {
    const running: Promise<void> = work().finally(() => this.pending.delete(running));
    this.pending.add(running);
  }

  private backgroundSync(): void {
    if (!this.dirty || this.syncing) return;
    this.dirty = false;
    this.syncing = true;
    fs.fdatasync(this.fd, () => {
      this.syncing = false; // an error here means the fd was rotated or closed meanwhile
    });
  }
}
