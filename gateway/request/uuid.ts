/**
 * UUIDv7 call ids: 48-bit Unix milliseconds, version 7, then random bits, so ids sort by
 * time. Random bytes come from a pooled CSPRNG buffer refilled in bulk, and the text is
 * written as ASCII into one scratch buffer and read out as a single flat string (hot path).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9562#section-5.7
 */
import { randomFillSync } from 'node:crypto';

const POOL_IDS = 512;
const pool = Buffer.allocUnsafe(10 * POOL_IDS);
let offset = pool.length;
const DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const text = Buffer.from('00000000-0000-7000-8000-000000000000', 'latin1');

function hex(byte: number, at: number): void {
  text[at] = DIGITS[byte >> 4]!;
  text[at + 1] = DIGITS[byte & 15]!;
}

export function uuidv7(now = Date.now()): string {
  if (offset >= pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = offset;
  offset += 10;
  const high = Math.floor(now / 0x10000); // top 32 of the 48 timestamp bits
  const low = now & 0xffff;
  hex((high >>> 24) & 0xff, 0);
  hex((high >>> 16) & 0xff, 2);
  hex((high >>> 8) & 0xff, 4);
  hex(high & 0xff, 6);
  hex(low >>> 8, 9);
  hex(low & 0xff, 11);
  hex(0x70 | (pool[r]! & 0x0f), 14);
  hex(pool[r + 1]!, 16);
  hex(0x80 | (pool[r + 2]! & 0x3f), 19);
  hex(pool[r + 3]!, 21);
  for (let i = 0; i < 6; i++) hex(pool[r + 4 + i]!, 24 + 2 * i);
  return text.toString('latin1', 0, 36);
}
