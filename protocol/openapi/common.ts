/**
 * Pieces every listener's document shares: the errors any request can meet before it is
 * routed, cached-read answers, and the schema of an OpenAPI document itself.
 */
import { z } from 'zod';
import type { ErrorCode } from '../errors';
import type { Answer, Named, Parameter } from './operation';

/**
 * Errors any request on any listener may get before or around its route: the HTTP parser's
 * refusals (400, 431), request head/body timeouts (408) and unexpected faults (500).
 */
export const EDGE_ERRORS: readonly ErrorCode[] = ['svc_bad_request', 'svc_request_timeout', 'svc_headers_too_large', 'svc_internal'];

/**
 * The request rules of control's listeners (`control/http/router.ts`), stated in each of their
 * documents: paths are never resolved, and query parameters are checked against the operation.
 */
export const REQUEST_RULES =
  "Paths are taken as sent: a dot segment (`.` or `..`, also spelled with `%2e`) is 400 `svc_bad_request`, never resolved. An operation's query parameters may each be given once; operations that answer JSON refuse any parameter they do not list (400 `svc_bad_request` naming it), while pages, feeds and metrics ignore them.";

/**
 * Errors of an operation that reads or writes control's database: 503 `svc_store_unavailable`
 * (with `Retry-After`) while control cannot reach it.
 */
export const STORE_ERRORS: readonly ErrorCode[] = ['svc_store_unavailable'];

/** A JSON request body over the listener's cap is refused before it is read. */
export const BODY_ERRORS: readonly ErrorCode[] = ['svc_payload_too_large'];

/** The document a listener serves at its `openapi.json`. */
export const OpenApiDocument = z.looseObject({
  openapi: z.string().regex(/^3\.1\.\d+$/),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

export const IF_NONE_MATCH: Parameter = {
  name: 'If-None-Match',
  in: 'header',
  schema: z.string(),
  description: 'An `ETag` from an earlier answer: 304 without a body while it is still current.',
};

/** The answers of a cached public read: 200 with `Cache-Control` and `ETag`, or 304. */
export function cachedJson(description: string, json: Named): Answer[] {
  return [
    { status: 200, description, json, requiredHeaders: ['Cache-Control', 'ETag'] },
    { status: 304, description: 'Not modified: the `If-None-Match` ETag is current', requiredHeaders: ['Cache-Control', 'ETag'] },
  ];
}

/**
 * The same for an HTML page: the `ETag` is weak (`W/"…"`), since each answer carries its own
 * CSP nonce, and a 304 carries no `Content-Security-Policy` (the stored one matches the stored body).
 */
export function cachedHtml(description: string): Answer[] {
  return [
    { status: 200, description, content: { type: 'text/html; charset=utf-8' }, requiredHeaders: ['Cache-Control', 'ETag'] },
    { status: 304, description: 'Not modified: the `If-None-Match` ETag is current', requiredHeaders: ['Cache-Control', 'ETag'] },
  ];
}

/** The same for an Atom 1.0 feed (RFC 4287). */
export function cachedAtom(description: string): Answer[] {
  return [
    {
      status: 200,
      description,
      content: { type: 'application/atom+xml; charset=utf-8', description: 'An Atom 1.0 feed document (RFC 4287)' },
      requiredHeaders: ['Cache-Control', 'ETag'],
    },
    { status: 304, description: 'Not modified: the `If-None-Match` ETag is current', requiredHeaders: ['Cache-Control', 'ETag'] },
  ];
}

/**
 * A settlement batch number as a path parameter: an integer (the segment is its decimal text,
 * `BATCH_NUMBER_TEXT` in protocol/receipts.ts: at most 15 digits).
 */
export const BATCH_NUMBER_PARAM = z.int().min(1).max(999_999_999_999_999);

/** A path parameter that is one segment of text. */
export function pathParam(name: string, description: string, schema: z.ZodType = z.string()): Parameter {
  return { name, in: 'path', schema, description, required: true };
}
