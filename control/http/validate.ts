/** Turn zod failures into one `svc_bad_request` listing every field and what is wrong. */
import type { z } from 'zod';
import { SvcError, type FieldError } from '../../protocol/errors';

export type { FieldError };

export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const field = [...issue.path.map(String), ...keys].join('.') || '(body)';
    const message = issue.code === 'unrecognized_keys' ? 'is not a known field' : issue.message;
    return { field, message };
  });
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const errors = fieldErrors(result.error);
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  throw new SvcError('svc_bad_request', detail, { extra: { errors } });
}

/** A positive integer query parameter no larger than `max`; 400 `svc_bad_request` otherwise. */
export function intParam(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new SvcError('svc_bad_request', `${name} must be an integer from 1 to ${max}`, {
      extra: { errors: [{ field: name, message: `must be an integer from 1 to ${max}` }] },
    });
  }
  return n;
}

/**
 * The position in a list's `cursor` query parameter, decoded by `decode` (null when the token
 * is not one this API issued), or undefined when no cursor was given; a token that does not
 * decode is 400 `svc_bad_request` on the field `cursor`.
 */
export function pageCursor<P>(token: string | undefined, decode: (token: string) => P | null): P | undefined {
  if (token === undefined) return undefined;
  const position = decode(token);
  if (position !== null) return position;
  const message = 'is not a next_cursor from a previous page';
  throw new SvcError('svc_bad_request', `cursor: ${message}`, { extra: { errors: [{ field: 'cursor', message }] } });
}
