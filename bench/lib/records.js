'use strict';
/** Outcome records as gateways ship them, made up fast for the settlement and fan-out benches. */
const { randomFillSync } = require('node:crypto');

/** One call in five is not ok, one of each failing outcome. */
const OUTCOME_MIX = [...Array(16).fill('ok'), 'latency_breach', 'server_error', 'network_error', 'client_error'];
/** The status a gateway records with each outcome in the mix. */
const OUTCOME_STATUS = { ok: 200, latency_breach: 200, server_error: 500, network_error: 502, client_error: 404 };

const rnd = Buffer.alloc(10 * 4096);
let rndAt = rnd.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A UUIDv7 call id at `ms`, from a pooled block of random bytes (millions of ids a second). */
function uuidv7(ms) {
  if (rndAt >= rnd.length) {
    randomFillSync(rnd);
    rndAt = 0;
  }
  const r = rndAt;
  rndAt += 10;
  const t = ms.toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-${HEX[0x70 | (rnd[r] & 15)]}${HEX[rnd[r + 1]]}-${HEX[0x80 | (rnd[r + 2] & 63)]}${HEX[rnd[r + 3]]}-${HEX[rnd[r + 4]]}${HEX[rnd[r + 5]]}${HEX[rnd[r + 6]]}${HEX[rnd[r + 7]]}${HEX[rnd[r + 8]]}${HEX[rnd[r + 9]]}`;
}

module.exports = { OUTCOME_MIX, OUTCOME_STATUS, uuidv7 };
