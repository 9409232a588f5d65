/**
 * The journal's in-memory tail: the records this process wrote and control has not acked yet,
 * kept as bytes in large blocks (one `Buffer` plus the end offset of each line, per block).
 * A journal write encodes its lines straight into the current block and is written to disk
 * from there: no buffer, array or object per write, so holding records costs the garbage
 * collector nothing per record or per write, and a shipping batch is built by copying bytes,
 * without a string per record.
 */
import { callIdOf } from './journal-file';

/** A place in the journal: segment and byte offset. */
export interface Position {
  seq: number;
  offset: number;
}

/** Bytes per block; a write larger than this gets a block of its own size. @default 256 KiB */
export const TAIL_BLOCK_BYTES = 256 * 1024;
/** Line ends a block starts with room for; the array doubles as lines are added. */
const INITIAL_LINES = 1024;

/** Consecutive bytes of one segment: committed lines, then room for more. */
interface Block {
  data: Buffer;
  seq: number;
  /** Segment offset of `data[0]`. */
  start: number;
  /** Committed bytes. */
  used: number;
  /** End (after the newline) of each committed line, as an offset into `data`. */
  ends: Uint32Array;
  lines: number;
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

/** Most UTF-8 bytes a string of `n` UTF-16 code units can take. */
const maxUtf8 = (n: number): number => n * 3;

export class RecordTail {
  private blocks: Block[] = [];
  /** Index of the block holding the first live line, and of that line in it. */
  private head = 0;
  private line = 0;
  private records = 0;
  /** The block of the last `stage()`, until `commit()`. */
  private staged: Block | null = null;

  /**
   * @param max live records held; older ones are let go
   * @param blockBytes bytes per block (tests use small blocks)
   */
  constructor(
    private readonly max: number,
    private readonly blockBytes: number = TAIL_BLOCK_BYTES,
  ) {}

  /** Live records held. */
  get size(): number {
    return this.records;
  }

  /**
   * Encode `text` (whole lines, each ending in `\n`, to be written at `start` of segment `seq`)
   * into the tail's memory and return its UTF-8 length; the bytes are at
   * `stagedData[stagedAt …]` for the disk write. Nothing is held until `commit()`; a later
   * `stage()` reuses the space.
   */
  stage(text: string, seq: number, start: number): number {
    let block = this.blocks.at(-1);
    const room = maxUtf8(text.length);
    if (block !== undefined && block.lines === 0) {
      // Nothing was committed to it (its write failed): it starts anywhere, or makes way for a
      // bigger block. So only the last block can ever be empty.
      if (block.data.length >= room) {
        block.seq = seq;
        block.start = start;
      } else {
        this.blocks.pop();
        block = this.openBlock(seq, start, room);
      }
    } else if (block === undefined || block.seq !== seq || block.start + block.used !== start || block.data.length - block.used < room) {
      block = this.openBlock(seq, start, room);
    }
    this.staged = block;
    return block.data.write(text, block.used, 'utf8');
  }

  /** The buffer holding the staged bytes. Only after `stage()`. */
  get stagedData(): Buffer {
    return this.staged!.data;
  }

  /** Where the staged bytes start in `stagedData`. */
  get stagedAt(): number {
    return this.staged!.used;
  }

  /**
   * The staged bytes are on disk: hold their lines (`lines[i]` is line i without its newline;
   * `oneByte` when every character took one byte). Beyond `max` records the oldest are let go
   * (they stay on disk).
   */
  commit(lines: readonly string[], oneByte: boolean): void {
    const block = this.staged!;
    this.staged = null;
    if (this.max <= 0) return;
    if (block.ends.length < block.lines + lines.length) {
      const grown = new Uint32Array(Math.max(block.ends.length * 2, block.lines + lines.length));
      grown.set(block.ends.subarray(0, block.lines));
      block.ends = grown;
    }
    if (this.records === 0) {
      this.head = this.blocks.length - 1;
      this.line = block.lines;
    }
    let end = block.used;
    for (const text of lines) {
      end += (oneByte ? text.length : Buffer.byteLength(text)) + 1;
      block.ends[block.lines++] = end;
    }
    block.used = end;
    this.records += lines.length;
    while (this.records > this.max) this.drop(Math.min(this.records - this.max, this.liveInHead()));
  }

  /** Where the first live record starts, or null when there is none. */
  start(): Position | null {
    if (this.records === 0) return null;
    const b = this.blocks[this.head]!;
    return { seq: b.seq, offset: b.start + (this.line === 0 ? 0 : b.ends[this.line - 1]!) };
  }

  /** Where the first live record ends. Only when `size > 0`. */
  firstEnd(): Position {
    const b = this.blocks[this.head]!;
    return { seq: b.seq, offset: b.start + b.ends[this.line]! };
  }

  /** The call id of the first live record (null for a line without one). Only when `size > 0`. */
  firstId(): string | null {
    const b = this.blocks[this.head]!;
    const from = this.line === 0 ? 0 : b.ends[this.line - 1]!;
    const to = b.ends[this.line]! - 1;
    const quote = from + ID_PREFIX.length + UUID_LENGTH;
    if (quote < to && b.data[quote] === 0x22 && b.data.compare(ID_PREFIX, 0, ID_PREFIX.length, from, from + ID_PREFIX.length) === 0) {
      return b.data.toString('latin1', from + ID_PREFIX.length, quote);
    }
    return callIdOf(b.data.toString('utf8', from, to));
  }

  /** Visit live lines, oldest first, as strings, until `visit` returns false. */
  forEachLine(visit: (line: string) => boolean): void {
    if (this.records === 0) return;
    for (let i = this.head, from = this.line; i < this.blocks.length; i++, from = 0) {
      const b = this.blocks[i]!;
      for (let l = from; l < b.lines; l++) {
        const begin = l === 0 ? 0 : b.ends[l - 1]!;
        if (!visit(b.data.toString('utf8', begin, b.ends[l]! - 1))) return;
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
    for (let i = this.head, from = this.line; i < this.blocks.length && count < limit; i++, from = 0) {
      const b = this.blocks[i]!;
      const take = Math.min(b.lines - from, limit - count);
      if (take <= 0) continue;
      const begin = from === 0 ? 0 : b.ends[from - 1]!;
      const stop = b.ends[from + take - 1]!;
      parts.push(b.data.subarray(begin, stop));
      count += take;
      end = { seq: b.seq, offset: b.start + stop };
    }
    const joined = Buffer.concat(parts); // a copy: the batch never aliases the tail's blocks
    for (let at = joined.indexOf(NEWLINE); at !== -1; at = joined.indexOf(NEWLINE, at + 1)) joined[at] = COMMA;
    return { body: joined.subarray(0, joined.length - 1), count, start, end };
  }

  /** Let the `n` oldest live records go. */
  drop(n: number): void {
    this.records -= n;
    while (n > 0) {
      const b = this.blocks[this.head]!;
      const live = b.lines - this.line;
      if (n < live) {
        this.line += n;
        return;
      }
      n -= live;
      this.line = b.lines;
      if (this.head === this.blocks.length - 1) break; // the block being filled stays
      this.head++;
      this.line = 0;
    }
    this.release();
  }

  private liveInHead(): number {
    return this.blocks[this.head]!.lines - this.line;
  }

  /** Start a block at `start` of segment `seq` with room for at least `room` bytes. */
  private openBlock(seq: number, start: number, room: number): Block {
    const block: Block = {
      data: Buffer.allocUnsafe(Math.max(this.blockBytes, room)),
      seq,
      start,
      used: 0,
      ends: new Uint32Array(INITIAL_LINES),
      lines: 0,
    };
    this.blocks.push(block);
    this.release();
    return block;
  }

  /** Forget blocks wholly behind the first live line (all but the last when nothing is live). */
  private release(): void {
    const keepFrom = this.records === 0 ? this.blocks.length - 1 : this.head;
    if (keepFrom <= 0) return;
    this.blocks = this.blocks.slice(keepFrom);
    this.head -= keepFrom;
    if (this.head < 0) {
      this.head = 0;
      this.line = 0;
    }
  }
}
