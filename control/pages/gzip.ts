/**
 * A cached page as gzip whose CSP nonce is still written per answer, without compressing per
 * answer. The deflate stream is cut around the nonce: the text before it ends on a byte
 * boundary (`Z_SYNC_FLUSH`), the nonce goes into a stored (uncompressed) block of its own, and
 * the text after it is a new run of blocks (it refers to nothing before it). Only the gzip
 * trailer depends on the nonce: its CRC-32 is combined from the CRCs of the three parts, with
 * the operator for the tail's length computed once per page (zlib's `crc32_combine_op`).
 *
 * @see RFC 1951 §3.2.4 (stored blocks) · RFC 1952 (gzip members) · zlib `crc32_combine_gen`
 */
import { constants, crc32, deflateRawSync } from 'node:zlib';

const POLY = 0xedb88320;

/** a(x) · b(x) mod p(x), for CRC-32 polynomials in zlib's reflected bit order. */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod p(x) for k = 0..31. */
const X2N: number[] = (() => {
  const table: number[] = [];
  let p = 0x40000000; // x^1
  table.push(p);
  for (let n = 1; n < 32; n++) table.push((p = multmodp(p, p)));
  return table;
})();

/** The operator that appends `bytes` bytes to a CRC: x^(8·bytes) mod p(x). */
export function crc32Shift(bytes: number): number {
  let p = 0x80000000; // x^0
  let k = 3;
  for (let n = bytes; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) p = multmodp(X2N[k & 31]!, p);
  return p;
}

/**
 * Multiplying by a fixed operator is linear over GF(2), so it splits by bytes: four tables of
 * 256 products, made once per page, turn each answer's 32-step `multmodp` into four lookups.
 */
export function shiftTable(shift: number): Uint32Array {
  const table = new Uint32Array(1024);
  for (let byte = 0; byte < 4; byte++)
    for (let v = 0; v < 256; v++) table[byte * 256 + v] = v === 0 ? 0 : multmodp(shift, (v << (8 * byte)) >>> 0);
  return table;
}

/** `multmodp(shift, crc)` through `shiftTable(shift)`: CRC-32 of A ‖ B is `applyShift(shiftTable(crc32Shift(|B|)), crc(A)) ^ crc(B)`. */
export const applyShift = (table: Uint32Array, crc: number): number =>
  (table[crc & 0xff]! ^ table[256 + ((crc >>> 8) & 0xff)]! ^ table[512 + ((crc >>> 16) & 0xff)]! ^ table[768 + (crc >>> 24)]!) >>> 0;

/** gzip header: no name, no time, OS unknown. */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

export interface GzipTemplate {
  /** Header, the compressed text before the slot, and the stored block's header. */
  head: Buffer;
  /** The compressed text after the slot (ending with the final block). */
  tail: Buffer;
  crcHead: number;
  crcTail: number;
  /** `shiftTable` of the operator that appends the tail's length. */
  shiftTail: Uint32Array;
  slotLength: number;
  /** Uncompressed length mod 2^32 (ISIZE). */
  size: number;
  /** Bytes of every answer. */
  length: number;
}

/** Compress `body` once around the `slotLength` bytes at `slotAt` (which change per answer). */
export function gzipTemplate(body: Buffer, slotAt: number, slotLength: number): GzipTemplate {
  if (slotLength > 0xffff) throw new RangeError('a stored block holds at most 65535 bytes');
  const before = body.subarray(0, slotAt);
  const after = body.subarray(slotAt + slotLength);
  const stored = Buffer.from([0, slotLength & 0xff, slotLength >> 8, ~slotLength & 0xff, (~slotLength >> 8) & 0xff]);
  const head = Buffer.concat([HEADER, deflateRawSync(before, { level: 9, finishFlush: constants.Z_SYNC_FLUSH }), stored]);
  const tail = deflateRawSync(after, { level: 9 });
  return {
    head,
    tail,
    crcHead: crc32(before),
    crcTail: crc32(after),
    shiftTail: shiftTable(crc32Shift(after.length)),
    slotLength,
    size: body.length >>> 0,
    length: head.length + slotLength + tail.length + 8,
  };
}

/** Bytes of the slab answers are carved from. */
const SLAB_BYTES = 64 * 1024;
let slab = Buffer.allocUnsafe(0);
let slabUsed = 0;

/**
 * `bytes` fresh bytes, carved from a slab as Node's own pool does for buffers under 4 KiB: a
 * page answer is a few KiB, past that pool, and a buffer of its own costs ~1.25 µs where a
 * carve costs ~0.13 µs (4,200 bytes, Node 20). A region is handed out once and never written
 * again; a slab is freed when no answer holds it.
 */
function carve(bytes: number): Buffer {
  if (bytes > SLAB_BYTES / 8) return Buffer.allocUnsafe(bytes);
  if (slabUsed + bytes > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + bytes);
  slabUsed += (bytes + 7) & ~7;
  return out;
}

/**
 * One whole answer for `slot` (`slotLength` latin1 characters, e.g. a nonce): the template's
 * bytes and the slot copied into one buffer, and the trailer (CRC-32 combined from the parts,
 * ISIZE) written in place.
 */
export function gzipAnswer(t: GzipTemplate, slot: string): Buffer {
  if (slot.length !== t.slotLength) throw new RangeError(`the slot takes exactly ${t.slotLength} characters`);
  const out = carve(t.length);
  const slotAt = t.head.copy(out, 0);
  out.write(slot, slotAt, t.slotLength, 'latin1');
  const crcHeadSlot = crc32(out.subarray(slotAt, slotAt + t.slotLength), t.crcHead);
  const trailerAt = slotAt + t.slotLength + t.tail.copy(out, slotAt + t.slotLength);
  out.writeUInt32LE((applyShift(t.shiftTail, crcHeadSlot) ^ t.crcTail) >>> 0, trailerAt);
  out.writeUInt32LE(t.size, trailerAt + 4);
  return out;
}

/** A header that names gzip (or x-gzip) as a whole coding, with no parameters anywhere. */
const PLAIN_GZIP = /^(?:[^;]*,)?[ \t]*(?:x-)?gzip[ \t]*(?:,[^;]*)?$/i;

/** Whether `Accept-Encoding` accepts gzip (named with a q above 0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  // What browsers send ("gzip, deflate, br", "gzip, deflate, br, zstd") needs no parse.
  if (PLAIN_GZIP.test(header)) return true;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip') continue;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}
