/**
 * The journal's in-memory tail: the records this process wrote and control has not acked yet,
 * kept as bytes in large blocks (one `Buffer` plus the end offset of each line, per block).
 * A journal write encodes its lines straight into the current block and is written to disk
 * from there: no buffer, array or object per write, so holding records costs the garbage
 * collector nothing per record or per write, and a shipping batch is built by copying bytes,
 * without a string per record.
 *
 * Memory is reused, not reallocated: blocks let go are kept (up to {@link SPARE_BLOCKS}) for
 * the next ones, and every batch is built in one scratch buffer that only grows. At thousands
 * of calls a second the tail would otherwise allocate megabytes of buffers a second, and V8
 * answers a steady churn of external memory with full mark-compact collections, which pause
 * every call in flight.
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
/** Blocks let go that are kept for reuse (2 MiB at the default block size). @default 8 */
export const SPARE_BLOCKS = 8;

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

/**
 * Records taken from the tail as one batch: their JSON joined with commas. `body` is a view of
 * the tail's scratch memory and is valid until the next `batch()`.
 */
export interface TailBatch {
  /** `head` + `rec,rec,…,rec` + `end` (both empty unless given to `batch()`). */
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
const NOTHING = Buffer.alloc(0);

/** The call id of line `l` of `b` (null for a line without one): from its bytes when it starts as gateways write it. */
function idAt(b: Block, l: number): string | null {
  const from = l === 0 ? 0 : b.ends[l - 1]!;
  const to = b.ends[l]! - 1;
  const quote = from + ID_PREFIX.length + UUID_LENGTH;
  if (quote < to && b.data[quote] === 0x22 && b.data.compare(ID_PREFIX, 0, ID_PREFIX.length, from, from + ID_PREFIX.length) === 0) {
    return b.data.toString('latin1', from + ID_PREFIX.length, quote);
  }
  return callIdOf(b.data.toString('utf8', from, to));
}

/** A block's memory, kept for reuse once the block is let go. */
type Spare = Pick<Block, 'data' | 'ends'>;

export class RecordTail {
  private blocks: Block[] = [];
  /** Index of the block holding the first live line, and of that line in it. */
  private head = 0;
  private line = 0;
  private records = 0;
  /** The block of the last `stage()`, until `commit()`. */
  private staged: Block | null = null;
  /** Memory of blocks let go, for the next ones (all `blockBytes` long). */
  private readonly spare: Spare[] = [];
  /** Where batches are built; grows to the largest batch and stays. */
  private scratch: Buffer = NOTHING;

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
    return idAt(this.blocks[this.head]!, this.line);
  }

  /**
   * The call ids of the `count` oldest live records (null for a line without one), read from
   * their bytes: one short string per record, nothing else.
   */
  firstIds(count: number): (string | null)[] {
    const ids: (string | null)[] = [];
    for (let i = this.head, from = this.line; i < this.blocks.length && ids.length < count; i++, from = 0) {
      const b = this.blocks[i]!;
      for (let l = from; l < b.lines && ids.length < count; l++) ids.push(idAt(b, l));
    }
    return ids;
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

  /**
   * Up to `limit` of the oldest live records as one comma-joined body, framed by `head` and
   * `end`; null when there are none. The body is built in the tail's scratch memory: it is
   * valid until the next call.
   */
  batch(limit: number, head: Uint8Array = NOTHING, end: Uint8Array = NOTHING): TailBatch | null {
    const start = this.start();
    if (start === null || limit <= 0) return null;
    // First pass: how many records and bytes, and where the last one ends.
    let bytes = 0;
    let last = start;
    const count = this.eachRun(limit, (b, begin, stop) => {
      bytes += stop - begin;
      last = { seq: b.seq, offset: b.start + stop };
    });
    // The records end in a newline each; the last one is dropped and the others become commas.
    const size = head.length + bytes - 1 + end.length;
    if (this.scratch.length < size) this.scratch = Buffer.allocUnsafeSlow(Math.max(size, this.scratch.length * 2));
    const out = this.scratch;
    out.set(head, 0);
    let at = head.length;
    this.eachRun(count, (b, begin, stop) => (at += b.data.copy(out, at, begin, stop)));
    for (let nl = out.indexOf(NEWLINE, head.length); nl !== -1 && nl < at - 1; nl = out.indexOf(NEWLINE, nl + 1)) out[nl] = COMMA;
    out.set(end, at - 1);
    return { body: out.subarray(0, size), count, start, end: last };
  }

  /**
   * Visit the oldest live lines, up to `limit`, as one run of bytes per block
   * (`data[begin…stop)`, whole lines); returns how many lines were visited.
   */
  private eachRun(limit: number, visit: (block: Block, begin: number, stop: number) => void): number {
    let count = 0;
    for (let i = this.head, from = this.line; i < this.blocks.length && count < limit; i++, from = 0) {
      const b = this.blocks[i]!;
      const take = Math.min(b.lines - from, limit - count);
      if (take <= 0) continue;
      visit(b, from === 0 ? 0 : b.ends[from - 1]!, b.ends[from + take - 1]!);
      count += take;
    }
    return count;
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
    const spare = room <= this.blockBytes ? this.spare.pop() : undefined;
    const block: Block = {
      data: spare?.data ?? Buffer.allocUnsafe(Math.max(this.blockBytes, room)),
      seq,
      start,
      used: 0,
      ends: spare?.ends ?? new Uint32Array(INITIAL_LINES),
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
    for (let i = 0; i < keepFrom && this.spare.length < SPARE_BLOCKS; i++) {
      const { data, ends } = this.blocks[i]!;
      if (data.length === this.blockBytes) this.spare.push({ data, ends });
    }
    this.blocks = this.blocks.slice(keepFrom);
    this.head -= keepFrom;
    if (this.head < 0) {
      this.head = 0;
      this.line = 0;
    }
  }
}
