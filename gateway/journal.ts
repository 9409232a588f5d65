/**
 * The outcome journal (DESIGN §3.7): every admitted call's record is appended here before
 * its response finishes, shipped to control in batches, and forgotten only once control
 * has acked it. A restart replays exactly the records not yet acked.
 *
 * Layout of `dir`:
 * - `outcomes-<seq>.jsonl`: segments of JSON lines, one `OutcomeRecord` per line. Each
 *   process appends to a fresh segment; a segment is closed at `segmentMaxBytes`.
 * - `acks.json`: the ack cursor (segment, byte offset of the first record not known to be
 *   acked) plus the ids acked out of order beyond it. Rewritten atomically (temp file,
 *   fsync, rename) on every `ack()`. Segments wholly behind the cursor are deleted.
 *
 * Durability: `append` is one `writeSync` on an `O_APPEND` descriptor, so a record is in the
 * OS before the call's response finishes and survives a crash of the process. `fdatasync`
 * runs in the background every `fsyncIntervalMs` (group commit): a power loss or kernel
 * crash can lose at most that window. Set it to 0 to sync every append.
 * Losing `acks.json` only re-ships acked records; control dedupes by `call_id`.
 * A torn last line (crash mid-write) is truncated away on open; an unreadable line in the
 * middle is skipped and counted.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { OutcomeRecord } from '../protocol/outcome';

/** Background fsync cadence. @default 200 */
export const DEFAULT_JOURNAL_FSYNC_INTERVAL_MS = 200;
/** Segment size before a new one is started. @default 8 MiB */
export const DEFAULT_JOURNAL_SEGMENT_BYTES = 8 * 1024 * 1024;

export interface JournalOptions {
  dir: string;
  /** @default DEFAULT_JOURNAL_FSYNC_INTERVAL_MS; 0 = fsync on every append */
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
}

interface Segment {
  seq: number;
  file: string;
  bytes: number;
}

const SEGMENT_NAME = /^outcomes-(\d{12})\.jsonl$/;
const STATE_FILE = 'acks.json';
const READ_CHUNK = 256 * 1024;

const segmentName = (seq: number): string => `outcomes-${String(seq).padStart(12, '0')}.jsonl`;

function parseRecord(line: string): OutcomeRecord | null {
  try {
    const value = JSON.parse(line) as Partial<OutcomeRecord> | null;
    return value !== null && typeof value === 'object' && typeof value.call_id === 'string' ? (value as OutcomeRecord) : null;
  } catch {
    return null;
  }
}

const ID_PREFIX = '{"call_id":"';
const UUID_LENGTH = 36;

/**
 * The call id of a journal line without parsing it: records are written with `call_id` first,
 * so it sits at a fixed place. Anything else falls back to a full parse.
 */
function callIdOf(line: string): string | null {
  if (line.startsWith(ID_PREFIX) && line.charCodeAt(ID_PREFIX.length + UUID_LENGTH) === 34 && line.endsWith('}')) {
    return line.slice(ID_PREFIX.length, ID_PREFIX.length + UUID_LENGTH);
  }
  return parseRecord(line)?.call_id ?? null;
}

/**
 * Visit complete lines of `file` from `from`. `visit` returns false to stop before that line.
 * Returns the offset where scanning stopped (the start of the refused line, or the end of the
 * last complete line).
 */
function scanLines(file: string, from: number, visit: (line: string, end: number) => boolean): number {
  const fd = fs.openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    let carry: Buffer | null = null;
    let readAt = from;
    let lineStart = from;
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, READ_CHUNK, readAt);
      if (n === 0) return lineStart;
      readAt += n;
      const buf: Buffer = carry === null ? chunk.subarray(0, n) : Buffer.concat([carry, chunk.subarray(0, n)]);
      let i = 0;
      for (let nl = buf.indexOf(10, i); nl !== -1; nl = buf.indexOf(10, i)) {
        const end = lineStart + (nl - i) + 1;
        if (!visit(buf.toString('utf8', i, nl), end)) return lineStart;
        lineStart = end;
        i = nl + 1;
      }
      carry = i < buf.length ? Buffer.from(buf.subarray(i)) : null;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Append-only, ack-tracked journal of outcome records. One per gateway process. */
export class Journal {
  private readonly dir: string;
  private readonly segmentMaxBytes: number;
  private readonly syncEveryAppend: boolean;
  private readonly segments: Segment[] = [];
  private fd: number;
  private cursor: { seq: number; offset: number };
  /** Acked ids at or beyond the cursor. */
  private readonly ackedAhead = new Set<string>();
  /** Ids handed out by pending() and not acked yet: the only ids ack() accepts. */
  private readonly inflight = new Set<string>();
  /** Readable records at or beyond the cursor, acked or not. */
  private beyondCursor = 0;
  private dirty = false;
  private syncing = false;
  private readonly timer: NodeJS.Timeout | null;
  private readonly counters = { tornBytes: 0, corruptLines: 0 };

  /** Open (creating if needed) the journal in `options.dir` and replay what is not acked. */
  static open(options: JournalOptions): Journal {
    return new Journal(options);
  }

  private constructor(options: JournalOptions) {
    this.dir = options.dir;
    this.segmentMaxBytes = options.segmentMaxBytes ?? DEFAULT_JOURNAL_SEGMENT_BYTES;
    const interval = options.fsyncIntervalMs ?? DEFAULT_JOURNAL_FSYNC_INTERVAL_MS;
    this.syncEveryAppend = interval === 0;
    fs.mkdirSync(this.dir, { recursive: true });

    const state = this.readState();
    const found = fs
      .readdirSync(this.dir)
      .map((name) => SEGMENT_NAME.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    for (const seq of found) {
      const file = path.join(this.dir, segmentName(seq));
      if (seq < state.seq) {
        fs.rmSync(file, { force: true }); // acked; its unlink was interrupted
        continue;
      }
      this.segments.push({ seq, file, bytes: this.repair(file) });
    }
    const first = this.segments[0];
    this.cursor = first === undefined ? { seq: 0, offset: 0 } : first.seq === state.seq ? { seq: state.seq, offset: Math.min(state.offset, first.bytes) } : { seq: first.seq, offset: 0 };
    this.replay(new Set(state.acked));

    const seq = Math.max(this.segments.at(-1)?.seq ?? 0, state.seq) + 1;
    this.fd = this.openSegment(seq);
    if (first === undefined) this.cursor = { seq, offset: 0 };
    this.advance();
    this.timer = this.syncEveryAppend ? null : setInterval(() => this.backgroundSync(), interval);
    this.timer?.unref();
  }

  /** Append one record. Synchronous: when it returns, the record is in the OS. Throws if the disk refuses it. */
  append(record: OutcomeRecord): void {
    const data = Buffer.from(JSON.stringify(record) + '\n', 'utf8');
    const active = this.segments.at(-1)!;
    try {
      for (let written = 0; written < data.length; ) written += fs.writeSync(this.fd, data, written);
    } catch (err) {
      // Never leave half a line for the next record to be glued onto.
      try {
        fs.ftruncateSync(this.fd, active.bytes);
      } catch {
        /* the original error is the one to report */
      }
      throw err;
    }
    active.bytes += data.length;
    this.beyondCursor++;
    if (this.syncEveryAppend) fs.fdatasyncSync(this.fd);
    else this.dirty = true;
    if (active.bytes >= this.segmentMaxBytes) {
      fs.fdatasyncSync(this.fd);
      fs.closeSync(this.fd);
      this.fd = this.openSegment(active.seq + 1);
      this.advance();
    }
  }

  /** Up to `limit` records not yet acked, oldest first. Repeated calls return the same records until acked. */
  pending(limit: number): OutcomeRecord[] {
    const out: OutcomeRecord[] = [];
    if (limit <= 0) return out;
    for (const segment of this.segments) {
      if (segment.seq < this.cursor.seq) continue;
      scanLines(segment.file, segment.seq === this.cursor.seq ? this.cursor.offset : 0, (line) => {
        const record = parseRecord(line);
        if (record !== null && !this.ackedAhead.has(record.call_id)) {
          out.push(record);
          this.inflight.add(record.call_id);
        }
        return out.length < limit;
      });
      if (out.length >= limit) break;
    }
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
    for (const segment of this.segments) {
      if (segment.seq < this.cursor.seq) continue;
      scanLines(segment.file, segment.seq === this.cursor.seq ? this.cursor.offset : 0, (line) => {
        const id = callIdOf(line);
        if (id !== null && !this.ackedAhead.has(id)) {
          ids.push(id);
          lines.push(line);
          this.inflight.add(id);
        }
        return ids.length < limit;
      });
      if (ids.length >= limit) break;
    }
    return { ids, lines };
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

  /** Records not yet acked. */
  backlog(): number {
    return this.beyondCursor - this.ackedAhead.size;
  }

  stats(): JournalStats {
    return { backlog: this.backlog(), segments: this.segments.length, ...this.counters };
  }

  /** fsync the active segment now. */
  sync(): void {
    fs.fdatasyncSync(this.fd);
    this.dirty = false;
  }

  /** fsync and close. The journal cannot be used afterwards. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.sync();
    fs.closeSync(this.fd);
  }

  private openSegment(seq: number): number {
    const file = path.join(this.dir, segmentName(seq));
    const fd = fs.openSync(file, 'a', 0o600);
    this.segments.push({ seq, file, bytes: fs.fstatSync(fd).size });
    return fd;
  }

  private backgroundSync(): void {
    if (!this.dirty || this.syncing) return;
    this.dirty = false;
    this.syncing = true;
    fs.fdatasync(this.fd, () => {
      this.syncing = false; // an error here means the fd was rotated or closed meanwhile
    });
  }

  /** Truncate a torn last line; returns the segment's size. */
  private repair(file: string): number {
    const size = fs.statSync(file).size;
    const end = scanLines(file, 0, () => true);
    if (end < size) {
      fs.truncateSync(file, end);
      this.counters.tornBytes += size - end;
    }
    return end;
  }

  /** Count records beyond the cursor; keep the acks from `acks.json` that still matter. */
  private replay(acked: ReadonlySet<string>): void {
    for (const segment of this.segments) {
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
    const passed: Segment[] = [];
    let moved = false;
    for (const segment of this.segments) {
      if (segment.seq < this.cursor.seq) continue;
      const from = segment.seq === this.cursor.seq ? this.cursor.offset : 0;
      const stop = scanLines(segment.file, from, (line) => {
        const id = callIdOf(line);
        if (id === null) return true;
        if (!this.ackedAhead.delete(id)) return false;
        this.beyondCursor--;
        return true;
      });
      if (stop !== from || segment.seq !== this.cursor.seq) moved = true;
      this.cursor = { seq: segment.seq, offset: stop };
      const active = segment === this.segments.at(-1);
      if (stop < segment.bytes || active) break;
      passed.push(segment);
    }
    if (moved || forceWrite) this.writeState();
    for (const segment of passed) {
      fs.rmSync(segment.file, { force: true });
      this.segments.splice(this.segments.indexOf(segment), 1);
    }
  }

  private readState(): { seq: number; offset: number; acked: string[] } {
    try {
      const state = JSON.parse(fs.readFileSync(path.join(this.dir, STATE_FILE), 'utf8')) as Record<string, unknown>;
      if (Number.isSafeInteger(state.seq) && Number.isSafeInteger(state.offset) && Array.isArray(state.acked)) {
        return { seq: state.seq as number, offset: state.offset as number, acked: state.acked.filter((x): x is string => typeof x === 'string') };
      }
    } catch {
      /* missing or unreadable: everything on disk is replayed (control dedupes) */
    }
    return { seq: 0, offset: 0, acked: [] };
  }

  private writeState(): void {
    const file = path.join(this.dir, STATE_FILE);
    const tmp = `${file}.tmp`;
    const body = JSON.stringify({ seq: this.cursor.seq, offset: this.cursor.offset, acked: [...this.ackedAhead] });
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeSync(fd, body);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  }
}
