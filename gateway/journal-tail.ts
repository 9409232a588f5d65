/**
 * The journal's in-memory tail: the records this process wrote and control has not acked yet,
 * kept as the bytes of each write (one `Buffer` per write, plus the end offset of each line).
 * Holding them costs the garbage collector nothing per record, and a shipping batch is built
 * by copying bytes, without a string per record.
 */
import { callIdOf } from './journal-file';

/** A place in the journal: segment and byte offset. */
export interface Position {
  seq: number;
  offset: number;
}

/** One write: its bytes, where they sit in which segment, and where each line ends in them. */
interface Chunk {
  data: Buffer;
  seq: number;
  /** Segment offset of `data[0]`. */
  start: number;
  /** End (after the newline) of each line, as an offset into `data`. */
  ends: Uint32Array;
}

/** Records taken from the tail as one batch: their JSON joined with commas. */
export interface TailBatch {
  /** `rec,rec,…,rec`: ready to go between `[` and `]`. */
  body: Buffer;
  count: number;
  /** Where the first record starts, and where the last one ends. */
  start: Position;
  end: Position;
}

const COMMA = 0x2c;
const NEWLINE = 0x0a;
const ID_PREFIX = Buffer.from('{"call_id":"', 'latin1');
const UUID_LENGTH = 36;

export class RecordTail {
  private chunks: Chunk[] = [];
  /** Index of the first live chunk, and of the first live line in it. */
  private head = 0;
  private line = 0;
  private records = 0;

  constructor(private readonly max: number) {}

  /** Live records held. */
  get size(): number {
    return this.records;
  }

  /** Remember one write of whole lines (`ends[i]`: end of line i in `data`). Beyond `max` records the oldest are let go (they stay on disk). */
  push(data: Buffer, seq: number, start: number, ends: Uint32Array): void {
    if (this.max <= 0) return;
    this.chunks.push({ data, seq, start, ends });
    this.records += ends.length;
    while (this.records > this.max) this.drop(Math.min(this.records - this.max, this.liveInHead()));
  }

  /** Where the first live record starts, or null when there is none. */
  start(): Position | null {
    const c = this.chunks[this.head];
    if (c === undefined) return null;
    return { seq: c.seq, offset: c.start + (this.line === 0 ? 0 : c.ends[this.line - 1]!) };
  }

  /** Where the first live record ends. Only when `size > 0`. */
  firstEnd(): Position {
    const c = this.chunks[this.head]!;
    return { seq: c.seq, offset: c.start + c.ends[this.line]! };
  }

  /** The call id of the first live record (null for a line without one). Only when `size > 0`. */
  firstId(): string | null {
    const c = this.chunks[this.head]!;
    const from = this.line === 0 ? 0 : c.ends[this.line - 1]!;
    const to = c.ends[this.line]! - 1;
    const quote = from + ID_PREFIX.length + UUID_LENGTH;
    if (quote < to && c.data[quote] === 0x22 && c.data.compare(ID_PREFIX, 0, ID_PREFIX.length, from, from + ID_PREFIX.length) === 0) {
      return c.data.toString('latin1', from + ID_PREFIX.length, quote);
    }
    return callIdOf(c.data.toString('utf8', from, to));
  }

  /** Visit live lines, oldest first, as strings, until `visit` returns false. */
  forEachLine(visit: (line: string) => boolean): void {
    for (let i = this.head, from = this.line; i < this.chunks.length; i++, from = 0) {
      const c = this.chunks[i]!;
      for (let l = from; l < c.ends.length; l++) {
        const begin = l === 0 ? 0 : c.ends[l - 1]!;
        if (!visit(c.data.toString('utf8', begin, c.ends[l]! - 1))) return;
      }
    }
  }

  /** Up to `limit` of the oldest live records as one comma-joined body; null when there are none. */
  batch(limit: number): TailBatch | null {
    const start = this.start();
    if (start === null || limit <= 0) return null;
    const parts: Buffer[] = [];
    let count = 0;
    let end = start;
    for (let i = this.head, from = this.line; i < this.chunks.length && count < limit; i++, from = 0) {
      const c = this.chunks[i]!;
      const take = Math.min(c.ends.length - from, limit - count);
      const begin = from === 0 ? 0 : c.ends[from - 1]!;
      const stop = c.ends[from + take - 1]!;
      parts.push(c.data.subarray(begin, stop));
      count += take;
      end = { seq: c.seq, offset: c.start + stop };
    }
    const joined = Buffer.concat(parts);
    for (let at = joined.indexOf(NEWLINE); at !== -1; at = joined.indexOf(NEWLINE, at + 1)) joined[at] = COMMA;
    return { body: joined.subarray(0, joined.length - 1), count, start, end };
  }

  /** Let the `n` oldest live records go. */
  drop(n: number): void {
    this.records -= n;
    while (n > 0) {
      const c = this.chunks[this.head]!;
      const live = c.ends.length - this.line;
      if (n < live) {
        this.line += n;
        return;
      }
      n -= live;
      this.head++;
      this.line = 0;
    }
    if (this.head > 256 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  private liveInHead(): number {
    return this.chunks[this.head]!.ends.length - this.line;
  }
}
