/**
 * SHA-256 digests as the sync protocol writes them: 64 lowercase hex digits. Both helpers
 * work through a lookup table without a branch per digit, which keeps them fast on the
 * random digits of a hash.
 */

/** Bytes in a SHA-256 digest. */
export const DIGEST_BYTES = 32;

/** Each lowercase hex digit's value by code unit; -1 for every other code unit below 128. */
const HEX_VALUE = new Int8Array(128).fill(-1);
/** 0 for each lowercase hex digit by code unit, 1 for every other code unit below 128. */
const NOT_HEX = new Uint8Array(128).fill(1);
for (let i = 0; i < 16; i++) {
  const c = '0123456789abcdef'.charCodeAt(i);
  HEX_VALUE[c] = i;
  NOT_HEX[c] = 0;
}

/** True when `v` is 64 lowercase hex digits. */
export function isDigestHex(v: unknown): v is string {
  if (typeof v !== 'string' || v.length !== DIGEST_BYTES * 2) return false;
  let bad = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    bad |= (c >>> 7) | NOT_HEX[c & 127]!;
  }
  return bad === 0;
}

/** Decode 64 lowercase hex digits into `out` (32 bytes); false when `hex` is anything else. */
export function decodeDigestHex(hex: string, out: Uint8Array): boolean {
  if (hex.length !== DIGEST_BYTES * 2 || out.length < DIGEST_BYTES) return false;
  for (let i = 0; i < DIGEST_BYTES; i++) {
    const a = hex.charCodeAt(2 * i);
    const b = hex.charCodeAt(2 * i + 1);
    if ((a | b) > 127) return false;
    const hi = HEX_VALUE[a]!;
    const lo = HEX_VALUE[b]!;
    if ((hi | lo) < 0) return false;
    out[i] = (hi << 4) | lo;
  }
  return true;
}
