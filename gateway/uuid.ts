/**
 * UUIDv7 call ids: 48-bit Unix milliseconds, version 7, then random bits, so ids sort by
 * time. Random bytes come from a pooled CSPRNG buffer refilled in bulk (hot path).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9562#section-5.7
 */
import { randomFillSync } from 'node:crypto';

const POOL_IDS = 512;
const pool = Buffer.allocUnsafe(10 * POOL_IDS);
let offset = pool.length;
const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function uuidv7(now = Date.now()): string {
  if (offset >= pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = offset;
  offset += 10;
  const ms = now.toString(16).padStart(12, '0');
  const b6 = 0x70 | (pool[r]! & 0x0f);
  const b8 = 0x80 | (pool[r + 2]! & 0x3f);
  return (
    `${ms.slice(0, 8)}-${ms.slice(8, 12)}-` +
    `${HEX[b6]}${HEX[pool[r + 1]!]}-${HEX[b8]}${HEX[pool[r + 3]!]}-` +
    `${HEX[pool[r + 4]!]}${HEX[pool[r + 5]!]}${HEX[pool[r + 6]!]}${HEX[pool[r + 7]!]}${HEX[pool[r + 8]!]}${HEX[pool[r + 9]!]}`
  );
}
