/**
 * The one catalogue of wire error codes (docs/design.md §9).
 *
 * Every error the service sends is `application/problem+json` (RFC 9457) with a stable
 * `code` member. Callers match on `code`, never on `title` or `detail`. The error table of
 * docs/errors.md is checked against this catalogue by `test/protocol/errors-readme.ts`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */
import { z } from 'zod';

export const ERROR_CODES = [
  'svc_auth_not_in_beta',
  'svc_endpoint_not_granted',
  'svc_forbidden_user_agent',
  'svc_rate_limited',
  'svc_payment_required',
  'svc_unknown_endpoint',
  'svc_method_not_allowed',
  'svc_bad_request',
  'svc_payload_too_large',
  'svc_request_timeout',
  'svc_headers_too_large',
  'svc_upstream_timeout',
  'svc_upstream_unavailable',
  'svc_maintenance',
  'svc_gateway_not_ready',
  'svc_unauthorized',
  'svc_forbidden_scope',
  'svc_not_found',
  'svc_conflict',
  'svc_not_settled',
  'svc_settler_halted',
  'svc_receipts_unverified',
  'svc_store_unavailable',
  'svc_internal',
] as const;

export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorSpec {
  /** HTTP status sent with this code. */
  readonly status: number;
  /** Short, stable, human-readable summary (RFC 9457 `title`). */
  readonly title: string;
  /** When the code is used; rendered into the docs/errors.md table. */
  readonly when: string;
}

/** Base URI of the `type` member; the fragment is the code. */
export const PROBLEM_TYPE_BASE = 'https://svc.dev/errors#';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const ERRORS: Readonly<Record<ErrorCode, ErrorSpec>> = Object.freeze({
  svc_auth_not_in_beta: {
    status: 403,
    title: 'Not in beta',
    when: 'Beta gate on and the gateway call has no key, or a malformed, unknown, expired or revoked key',
  },
  svc_endpoint_not_granted: {
    status: 403,
    title: 'Endpoint not granted',
    when: 'The key is valid but limited to other endpoints',
  },
  svc_forbidden_user_agent: {
    status: 403,
    title: 'User-Agent not allowed',
    when: 'Public read API called with a command-line client, server runtime or empty User-Agent',
  },
  svc_rate_limited: {
    status: 429,
    title: 'Rate limited',
    when: 'A per-key or per-IP limit is exhausted; wait for `Retry-After` seconds',
  },
  svc_payment_required: {
    status: 402,
    title: 'Payment required',
    when: "A prepaid endpoint and the key's account cannot cover its premium; `required`, `available` and `account_id` say by how much (deposit, then retry)",
  },
  svc_unknown_endpoint: {
    status: 404,
    title: 'Unknown endpoint',
    when: 'No endpoint with that id is registered on the gateway',
  },
  svc_method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    when: 'The endpoint does not accept this method, or `CONNECT` on any listener; see the `Allow` header',
  },
  svc_bad_request: {
    status: 400,
    title: 'Bad request',
    when: 'Malformed input: invalid JSON, failed validation, path escape attempt, a request the HTTP parser refuses, a target that is not a path',
  },
  svc_payload_too_large: {
    status: 413,
    title: 'Payload too large',
    when: 'The request body exceeds the configured limit',
  },
  svc_request_timeout: {
    status: 408,
    title: 'Request timeout',
    when: 'The caller stopped sending its request body for longer than `gateway.clientBodyTimeoutMs`, or did not finish its request head or request within the server timeouts; the connection is closed',
  },
  svc_headers_too_large: {
    status: 431,
    title: 'Request header fields too large',
    when: 'More than `gateway.maxHeaders` request header fields, or a header section over 16 KiB',
  },
  svc_upstream_timeout: {
    status: 504,
    title: 'Upstream timeout',
    when: "The upstream did not answer within the endpoint's timeout",
  },
  svc_upstream_unavailable: {
    status: 502,
    title: 'Upstream unavailable',
    when: 'The upstream refused or reset the connection',
  },
  svc_maintenance: {
    status: 503,
    title: 'Maintenance',
    when: 'Maintenance mode is on; retry after `Retry-After` seconds',
  },
  svc_gateway_not_ready: {
    status: 503,
    title: 'Gateway not ready',
    when: 'The gateway has not loaded a snapshot yet',
  },
  svc_unauthorized: {
    status: 401,
    title: 'Unauthorized',
    when: 'Admin, sync or metrics API (or detailed gateway `/health`) called without the right bearer token',
  },
  svc_forbidden_scope: {
    status: 403,
    title: 'Scope missing',
    when: "Admin API called with an operator's token that lacks the route's scope, or granting, revoking or rotating beyond the caller's own scopes; the detail names the scope needed",
  },
  svc_not_found: {
    status: 404,
    title: 'Not found',
    when: 'The addressed resource (key, endpoint, flag, route) does not exist',
  },
  svc_conflict: {
    status: 409,
    title: 'Conflict',
    when: 'The resource already exists or is in a state that forbids the change',
  },
  svc_not_settled: {
    status: 409,
    title: 'Not settled',
    when: 'The call is recorded but not settled yet, so it has no receipt or inclusion proof; ask again after the next settlement',
  },
  svc_settler_halted: {
    status: 409,
    title: 'Settler halted',
    when: 'A settled batch has no receipt, or the receipt chain does not verify, so the settler signs and settles nothing: `settler resume` and `run-once` are refused until the database is restored from a backup or `svcctl receipts reissue BATCH` re-signs the batch without a receipt',
  },
  svc_receipts_unverified: {
    status: 503,
    title: 'Receipt chain unverified',
    when: 'The receipt chain in the database does not verify (a receipt changed, swapped or missing since control signed it), so the indexer serves no checkpoint and no consistency read, and the settler halts, until the database is restored from a backup and control restarted',
  },
  svc_store_unavailable: {
    status: 503,
    title: 'Store unavailable',
    when: "Control cannot reach its database (PostgreSQL stopped, restarting or out of reach); retry after `Retry-After` seconds. On the admin and sync API the detail names the store, its URL's password masked; the public API and the indexer say only that the data is temporarily unavailable",
  },
  svc_internal: {
    status: 500,
    title: 'Internal error',
    when: 'An unexpected fault; details are logged, never sent',
  },
});

/** The RFC 9457 body, with our stable `code` and optional extension members. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  [extension: string]: unknown;
}

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: ErrorCode,
  })
  .loose();

/** One invalid field of a `svc_bad_request`: the `errors` extension member lists them all. */
export const FieldError = z.strictObject({
  /** Dotted path of the field (`limit.count`, `apis_paid.2`), or `(body)` for the body as a whole. */
  field: z.string(),
  message: z.string(),
});
export type FieldError = z.infer<typeof FieldError>;

/** Build the problem body for `code`. `extra` adds RFC 9457 extension members. */
export function problem(code: ErrorCode, detail?: string, extra?: Record<string, unknown>): Problem {
  const spec = ERRORS[code];
  return {
    type: PROBLEM_TYPE_BASE + code,
    title: spec.title,
    status: spec.status,
    detail: detail ?? spec.title,
    code,
    ...extra,
  };
}

/**
 * An error that maps to one catalogue entry. Throw it anywhere in a request handler; the
 * listener turns it into problem+json. `headers` are added to the response (`Retry-After`,
 * `Allow`…); `extra` becomes extension members (e.g. per-field validation errors).
 */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly extra: Readonly<Record<string, unknown>> | undefined;
  /**
   * The detail the public listeners ({api_url}, {indexer_url}) send instead, without `extra`:
   * for a problem whose detail names what the public is not shown (a database's host and user).
   * Undefined: every listener sends the same problem.
   */
  readonly publicDetail: string | undefined;

  constructor(
    code: ErrorCode,
    detail?: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown>; cause?: unknown; publicDetail?: string } = {},
  ) {
    super(detail ?? ERRORS[code].title, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = options.headers ?? {};
    this.extra = options.extra;
    this.publicDetail = options.publicDetail;
  }

  toProblem(): Problem {
    return problem(this.code, this.message, this.extra);
  }
}

export function isSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError;
}
