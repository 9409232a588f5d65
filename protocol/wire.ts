/**
 * Primitive wire types every answer shares: times, counts, amounts, versions. Answers are
 * zod schemas (types inferred), so the OpenAPI documents (`protocol/openapi/`) and the code
 * that builds or reads an answer cannot disagree.
 */
import { z } from 'zod';

/** An ISO 8601 UTC time as `Date.prototype.toISOString` writes it (`2030-01-01T12:00:00.000Z`). */
export const IsoTime = z.iso.datetime();

/** A count of things: an integer ≥ 0. */
export const Count = z.number().int().min(0);

/** An amount in micro-units (6 decimals): an integer ≥ 0. */
export const MicroAmount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A duration or age in milliseconds: an integer ≥ 0. */
export const Millis = z.number().int().min(0);

/** A state version (docs/design.md §4): every mutation produces the next one. */
export const StateVersion = z.number().int().min(0);

/** Exactly `{"status":"ok","version":"v1"}`: `/health` of the public API and the indexer (docs/design.md §7). */
export const HealthAnswer = z.strictObject({ status: z.literal('ok'), version: z.literal('v1') });
export type HealthAnswer = z.infer<typeof HealthAnswer>;

export const HEALTH_BODY: Readonly<HealthAnswer> = Object.freeze({ status: 'ok', version: 'v1' });

/**
 * The `limit` of a paged list's query: an integer from 1 to `max` as its text (at most 7
 * digits), `fallback` when absent. `noun` names what a page holds, for the document.
 */
export const pageLimit = (noun: string, max: number, fallback: number) =>
  z
    .string()
    .refine((v) => /^[0-9]{1,7}$/.test(v) && Number(v) >= 1 && Number(v) <= max, { message: `must be an integer from 1 to ${max}` })
    .transform(Number)
    .optional()
    .describe(`${noun} per page: an integer from 1 to ${max} (default ${fallback})`);

/** The `cursor` of a paged list's query. */
export const PageCursor = z.string().optional().describe('`next_cursor` of the previous page');
