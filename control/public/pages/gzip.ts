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

/** CRC-32 of A ‖ B from crc(A), crc(B) and the shift for B's length. */
export const crc32Combine = (crcA: number, crcB: number, shiftB: number): number => (multmodp(shiftB, crcA) ^ crcB) >>> 0;

/** gzip header: no name, no time, OS unknown. */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

export interface GzipTemplate {
  /** Header, the compressed text before the slot, and the stored block's header. */
  head: Buffer;
  /** The compressed text after the slot (ending with the final block). */
  tail: Buffer;
  crcHead: number;
  crcTail: number;
  shiftSlotTail: number;
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
    shiftSlotTail: crc32Shift(after.length),
    slotLength,
    size: body.length >>> 0,
    length: head.length + slotLength + tail.length + 8,
  };
}

/** The gzip trailer for this answer's slot bytes. */
export function gzipTrailer(t: GzipTemplate, slot: Buffer): Buffer {
  const crc = crc32Combine(crc32(slot, t.crcHead), t.crcTail, t.shiftSlotTail);
  const trailer = Buffer.allocUnsafe(8);
  trailer.writeUInt32LE(crc, 0);
  trailer.writeUInt32LE(t.size, 4);
  return trailer;
}

/** Whether `Accept-Encoding` accepts gzip (named with a q above 0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip') continue;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}
