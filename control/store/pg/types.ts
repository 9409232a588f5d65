/**
 * How node-postgres turns the store's column types into JavaScript values. Pass
 * {@link PG_TYPES} as the `types` option of every `Pool` or `Client` on the store's database:
 * it is per connection, so nothing else in the process is affected.
 *
 * - BIGINT (int8: times, money, counts, ids; `count(*)` is one too) becomes a number, as
 *   better-sqlite3 gives it, and throws rather than round one past 2^53 − 1. node-postgres
 *   leaves int8 as a string by default.
 * - `sum()` of BIGINT is NUMERIC, which stays a string: cast sums (`sum(amount)::bigint`).
 * - BYTEA is a Buffer, DOUBLE PRECISION a number (node-postgres' defaults).
 * - UUID (call ids, migration 10) is its lowercase text, node-postgres' default.
 */
import { types, type CustomTypesConfig } from 'pg';

/** Parse an int8's text; a value JavaScript cannot hold exactly is an error, not a rounded number. */
export function parseBigint(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`bigint ${text} is beyond the safe integers (±${Number.MAX_SAFE_INTEGER})`);
  return value;
}

export const PG_TYPES: CustomTypesConfig = {
  getTypeParser: (oid, format) => {
    if (oid === types.builtins.INT8 && format !== 'binary') return parseBigint;
    const builtin: unknown = types.getTypeParser(oid, format);
    return builtin;
  },
};
