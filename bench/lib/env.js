'use strict';
/** Bench parameters from the environment. */

/** `process.env[name]` as a whole number ≥ `min`, or `fallback` when unset or empty; anything else throws. */
function envInt(name, fallback, min = 0) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

module.exports = { envInt };
