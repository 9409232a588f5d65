/**
 * The outcome journal (docs/design.md §3.7): every admitted call's record is appended here before
 * its response finishes, shipped to control in batches, and forgotten only once control
 * has acked it. A restart replays exactly the records not yet acked.
 *
 * Layout of `dir`:
 * - `outcomes-<seq>.jsonl`: segments of JSON lines, one `OutcomeRecord` per line. Each
 *   process appends to a fresh segment; a segment is closed at `segmentMaxBytes`.
 * - `rejected.jsonl`: records control refused as invalid, with its reason; kept, never shipped.
 * - `acks.json`: the ack cursor (segment, byte offset of the first record not known to be
 *   acked) plus the ids acked out of order beyond it. Replaced atomically (temp file, fsync,
 *   rename) off the event loop after acks, and blocking at `close()`. Segments wholly behind
 *   the cursor are deleted.
 *
 * Durability: a record is in the OS (written to an `O_APPEND` descriptor) before the call's
 * response finishes, and so survives a crash of the process. `append` writes at once;
 * `appendThen` gathers the records of one event-loop turn into one write and calls back
 * after it (the caller ends the response then). `fdatasync` runs in the background every
 * `fsyncIntervalMs` (group commit): a power loss or kernel crash can lose at most that
 * window. Set it to 0 to sync every write.
 * Losing `acks.json` (or its last update) only re-ships acked records; control dedupes by
 * `call_id`. A torn last line (crash mid-write) is truncated away on open; an unreadable
 * line in the middle is skipped and counted.
 *
 * Shipping reads what this process appended from memory (the last
 * {@link JOURNAL_TAIL_RECORDS} records); older records, and those of earlier processes, are
 * read back from the segments.
 *
 * This file keeps which records are acked and moves the cursor; the files are `segments.ts`
 * (the segments, fsync, rotation) and `ack-file.ts` (`acks.json`), the memory is
 * `journal-tail.ts`, `appendThen`'s one write per turn is `turn-batch.ts`, and reading lines
 * back is `journal-file.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { OutcomeRecord } from '../../protocol/outcome';
import { AckFile, readAckState, removeAckTemps, type AckState } from './ack-file';
import { callIdOf, parseRecord, scanLines } from './journal-file';
import { RecordTail, type Position, type TailBatch } from './journal-tail';
import { Segments } from './segments';
import { TurnBatch, type Written } from './turn-batch';

export type { TailBatch, Written };

/** Background fsync cadence. @default 200 */
export const DEFAULT_JOURNAL_FSYNC_INTERVAL_MS = 200;
/** Segment size before a new one is started. @default 8 MiB */
export const DEFAULT_JOURNAL_SEGMENT_BYTES = 8 * 1024 * 1024;
/** Unacked records kept in memory for shipping; beyond that they are read from disk. @default 20000 */
export const JOURNAL_TAIL_RECORDS = 20_000;
/** Records control refused, kept for operators (one JSON object per line). */
export const REJECTED_FILE = 'rejected.jsonl';

export interface JournalOptions {
  dir: string;
  /** @default DEFAULT_JOURNAL_FSYNC_INTERVAL_MS; 0 = fsync on every write */
  fsyncIntervalMs?: number;
  /** @default DEFAULT_JOURNAL_SEGMENT_BYTES */
  segmentMaxBytes?: number;
}

export interface JournalStats {
  backlog: number;
  segments: number;
  /** Bytes of torn last lines truncated at open. */
  tornBytes: number;
  /** Unreadable lines skipped since open. */
  corruptLines: number;
  /** Failed background writes of the ack file (the next ack retries). */
  ackStateErrors: number;
  /** Records set aside in `rejected.jsonl` since open. */
  rejected: number;
}

/** Append-only, ack-tracked journal of outcome records. One per gateway process. */
export class Journal {
  private readonly dir: string;
  private readonly files: Segments;
  private readonly ackFile: AckFile;
  private cursor: Position;
  /** Acked ids at or beyond the cursor. */
  private readonly ackedAhead = new Set<string>();
  /** Ids handed out by pending() and not acked yet: the only ids ack() accepts. */
  private readonly inflight = new Set<string>();
  /** Readable records at or beyond the cursor, acked or not. */
  private beyondCursor = 0;
  /** This process's unacked records from the first one held on; every later record is held too. */
  private readonly tail = new RecordTail(JOURNAL_TAIL_RECORDS);
  private readonly queued = new TurnBatch((lines) => this.write(lines));
  private closed = false;
  private readonly counters = { tornBytes: 0, corruptLines: 0, ackStateErrors: 0, rejected: 0 };

  /** Open (creating if needed) the journal in `options.dir` and replay what is not acked. */
  static open(options: JournalOptions): Journal {
    return new Journal(options);
  }

  private constructor(options: JournalOptions) {
    this.dir = options.dir;
    const interval = options.fsyncIntervalMs ?? DEFAULT_JOURNAL_FSYNC_INTERVAL_MS;
    this.files = new Segments(this.dir, options.segmentMaxBytes ?? DEFAULT_JOURNAL_SEGMENT_BYTES, interval === 0);
    this.ackFile = new AckFile(
      this.dir,
      () => this.ackState(),
      () => this.counters.ackStateErrors++,
    );
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    removeAckTemps(this.dir);

    const state = readAckState(this.dir);
    this.counters.tornBytes += this.files.load(state.seq);
    const first = this.files.list[0];
    this.cursor =
      first === undefined
        ? { seq: 0, offset: 0 }
        : first.seq === state.seq
          ? { seq: state.seq, offset: Math.min(state.offset, first.bytes) }
          : { seq: first.seq, offset: 0 };
    this.replay(new Set(state.acked));

    const seq = Math.max(this.files.list.at(-1)?.seq ?? 0, state.seq) + 1;
    this.files.openNext(seq);
    if (first === undefined) this.cursor = { seq, offset: 0 };
    this.advance();
    this.files.syncInBackground(interval);
  }

  /** Append one record now. When it returns, the record is in the OS. Throws if the disk refuses it. */
  append(record: OutcomeRecord): void {
    this.flush();
    this.write([JSON.stringify(record)]);
  }

  /**
   * Append one record with the others of this event-loop turn, in one write at its end;
   * `written` runs after that write. Use it where the caller's response can wait for it.
   */
  appendThen(record: OutcomeRecord, written: Written): void {
    this.queued.add(JSON.stringify(record), written);
  }

  /** Write the records queued by `appendThen` now and report to their callbacks. */
  flush(): void {
    this.queued.flush();
  }

  /** Up to `limit` records not yet acked, oldest first. Repeated calls return the same records until acked. */
  pending(limit: number): OutcomeRecord[] {
    const out: OutcomeRecord[] = [];
    const { ids, lines } = this.pendingLines(limit);
    for (let i = 0; i < lines.length; i++) {
      const record = parseRecord(lines[i]!);
      if (record !== null) {
        out.push(record);
        continue;
      }
      // A damaged line that still shows an id: nothing can ship it, so it is passed over.
      this.counters.corruptLines++;
      this.inflight.delete(ids[i]!);
      this.ackedAhead.add(ids[i]!);
    }
    if (out.length < lines.length) this.advance();
    return out;
  }

  /**
   * Like `pending`, but the records as their journal lines (JSON, unparsed) with their ids:
   * what the shipper sends, without parsing and re-serialising every record.
   */
  pendingLines(limit: number): { ids: string[]; lines: string[] } {
    const ids: string[] = [];
    const lines: string[] = [];
    if (limit <= 0) return { ids, lines };
    const take = (id: string, line: string): boolean => {
      if (!this.ackedAhead.has(id)) {
        ids.push(id);
        lines.push(line);
        this.inflight.add(id);
      }
      return ids.length < limit;
    };
    const onDisk = this.scanToTail((line) => {
      const id = callIdOf(line);
      return id === null || take(id, line);
    });
    if (onDisk.reached && ids.length < limit) {
      this.tail.forEachLine((line) => {
        const id = callIdOf(line);
        return id === null || take(id, line);
      });
    }
    return { ids, lines };
  }

  /**
   * The shipper's fast path: up to `limit` of the oldest unacked records as one comma-joined
   * body between `head` and `end`, straight from the bytes in memory (valid until the next
   * call: the memory is reused). Null when that is not possible (records from disk come first,
   * or acks arrived out of order): use `pendingLines` then.
   */
  pendingBatch(limit: number, head?: Uint8Array, end?: Uint8Array): TailBatch | null {
    if (this.ackedAhead.size > 0 || this.inflight.size > 0) return null;
    const start = this.tail.start();
    if (start === null || start.seq !== this.cursor.seq || start.offset !== this.cursor.offset) return null;
    return this.tail.batch(limit, head, end);
  }

  /**
   * Ack a batch from `pendingBatch` that control committed. Returns how many records that
   * acked; a batch that no longer starts at the cursor acks nothing (its records are shipped
   * again, and control dedupes them).
   */
  ackBatch(batch: TailBatch): number {
    const start = this.tail.start();
    if (start === null || start.seq !== batch.start.seq || start.offset !== batch.start.offset) return 0;
    if (this.cursor.seq !== batch.start.seq || this.cursor.offset !== batch.start.offset) return 0;
    this.tail.drop(batch.count);
    this.beyondCursor -= batch.count;
    this.cursor = batch.end;
    this.settleCursor(batch.start, true);
    return batch.count;
  }

  /**
   * The call ids of a batch from `pendingBatch`, before `ackBatch` lets it go (whoever waits on
   * its records learns which ones control committed); none when the batch no longer starts the
   * tail (then `ackBatch` acks nothing, and its records are shipped again).
   */
  batchIds(batch: TailBatch): string[] {
    const start = this.tail.start();
    if (start === null || start.seq !== batch.start.seq || start.offset !== batch.start.offset) return [];
    return this.tail.firstIds(batch.count).filter((id) => id !== null);
  }

  /** Mark records acked by control. Ids not handed out by pending() in this process are ignored. Returns how many were new. */
  ack(callIds: Iterable<string>): number {
    let count = 0;
    for (const id of callIds) {
      if (this.inflight.delete(id)) {
        this.ackedAhead.add(id);
        count++;
      }
    }
    if (count > 0) this.advance(true);
    return count;
  }

  /**
   * Set aside a record handed out by `pendingLines` that control will never accept: its line
   * and `reason` are appended (and fsynced) to `rejected.jsonl`, then it counts as acked.
   */
  reject(callId: string, line: string, reason: string): void {
    if (!this.inflight.has(callId)) return;
    const entry = JSON.stringify({ rejected_at: new Date().toISOString(), call_id: callId, reason, line }) + '\n';
    const fd = fs.openSync(path.join(this.dir, REJECTED_FILE), 'a', 0o600);
    try {
      fs.writeSync(fd, entry);
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    this.counters.rejected++;
    this.ack([callId]);
  }

  /** Records not yet acked. */
  backlog(): number {
    return this.beyondCursor - this.ackedAhead.size;
  }

  stats(): JournalStats {
    return { backlog: this.backlog(), segments: this.files.list.length, ...this.counters };
  }

  /** Write what is queued and fsync the active segment now. */
  sync(): void {
    this.flush();
    this.files.sync();
  }

  /**
   * Write what is queued, fsync, store the ack cursor, close (once; later calls do nothing). The
   * journal cannot be used afterwards. The cursor is stored before this returns; the promise
   * resolves once the background work already started has finished too (`idle()`).
   */
  close(): Promise<void> {
    if (!this.closed) {
      this.files.stopSync();
      this.sync();
      this.files.close();
      this.closed = true;
      this.ackFile.close();
    }
    return this.idle();
  }

  /** Resolves once no ack-state write (it creates and removes a temp file) nor segment sync, close or unlink runs. */
  async idle(): Promise<void> {
    await Promise.all([this.ackFile.idle(), this.files.idle()]);
  }

  /** One write of whole lines; on failure nothing of it stays in the segment. */
  private write(lines: string[]): void {
    const active = this.files.active;
    const text = lines.length === 1 ? lines[0]! + '\n' : lines.join('\n') + '\n';
    // Encoded once, into the tail's memory, and written to disk from there.
    const bytes = this.tail.stage(text, active.seq, active.bytes);
    this.files.write(this.tail.stagedData, this.tail.stagedAt, bytes);
    this.tail.commit(lines, bytes === text.length);
    this.beyondCursor += lines.length;
    if (this.files.wrote(bytes)) this.advance(); // a new segment was started
  }

  /** Where the in-memory tail begins: records before it are read from disk. */
  private tailStart(): Position {
    const first = this.tail.start();
    if (first !== null) return first;
    const active = this.files.active;
    return { seq: active.seq, offset: active.bytes };
  }

  /**
   * Visit the lines on disk from the cursor up to the tail. `reached` is true when every line
   * before the tail was visited (no visit returned false); `at` is where the visits stopped.
   */
  private scanToTail(visit: (line: string) => boolean): { reached: boolean; at: Position } {
    const bound = this.tailStart();
    let at = this.cursor;
    for (const segment of this.files.list) {
      if (segment.seq < this.cursor.seq) continue;
      if (segment.seq > bound.seq) break;
      const from = segment.seq === this.cursor.seq ? this.cursor.offset : 0;
      const limit = segment.seq === bound.seq ? bound.offset : Infinity;
      let refused = false;
      const stop =
        from >= limit
          ? from
          : scanLines(segment.file, from, (line, end) => {
              if (end > limit) return false;
              if (visit(line)) return true;
              refused = true;
              return false;
            });
      at = { seq: segment.seq, offset: stop };
      if (refused) return { reached: false, at };
    }
    return { reached: true, at };
  }

  /** Count records beyond the cursor; keep the acks from `acks.json` that still matter. */
  private replay(acked: ReadonlySet<string>): void {
    for (const segment of this.files.list) {
      if (segment.seq < this.cursor.seq) continue;
      scanLines(segment.file, segment.seq === this.cursor.seq ? this.cursor.offset : 0, (line) => {
        const id = callIdOf(line);
        if (id === null) this.counters.corruptLines++;
        else {
          this.beyondCursor++;
          if (acked.has(id)) this.ackedAhead.add(id);
        }
        return true;
      });
    }
  }

  /** Move the cursor over acked (and unreadable) records; delete segments left behind. */
  private advance(forceWrite = false): void {
    const before = this.cursor;
    const onDisk = this.scanToTail((line) => {
      const id = callIdOf(line);
      if (id === null) return true;
      if (!this.ackedAhead.delete(id)) return false;
      this.beyondCursor--;
      return true;
    });
    this.cursor = onDisk.at;
    if (onDisk.reached) {
      while (this.tail.size > 0) {
        const id = this.tail.firstId();
        if (id !== null) {
          if (!this.ackedAhead.delete(id)) break;
          this.beyondCursor--;
        }
        this.cursor = this.tail.firstEnd();
        this.tail.drop(1);
      }
    }
    this.settleCursor(before, forceWrite);
  }

  /** After the cursor moved: normalise it, delete segments behind it, store it. */
  private settleCursor(before: Position, forceWrite: boolean): void {
    // A cursor at the end of a closed segment belongs at the start of the next one.
    const segments = this.files.list;
    for (
      let i = segments.findIndex((s) => s.seq === this.cursor.seq);
      i >= 0 && i < segments.length - 1 && this.cursor.offset >= segments[i]!.bytes;
      i++
    ) {
      this.cursor = { seq: segments[i + 1]!.seq, offset: 0 };
    }
    this.files.dropBefore(this.cursor.seq);
    const moved = before.seq !== this.cursor.seq || before.offset !== this.cursor.offset;
    if (moved || forceWrite) this.ackFile.save();
  }

  private ackState(): AckState {
    return { seq: this.cursor.seq, offset: this.cursor.offset, acked: [...this.ackedAhead] };
  }
}
