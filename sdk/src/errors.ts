/**
 * `SvcError`: what the SDK rejects with when svc answers with an RFC 9457 problem+json body
 * (`{type, title, status, detail, code}`). Match on `code` (one of the exported constants,
 * e.g. `SVC_AUTH_NOT_IN_BETA`), never on `title` or `detail`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */
import type { ErrorCode } from './generated/errors';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Client-side code: the indexer serves a receipt history that does not extend the last
 * checkpoint this client verified (a batch at or before it was rewritten, or the history was
 * cut). Raised by `verifyConsistency` and by `verifyRefund` with a `checkpointStore`.
 */
export const SVC_SDK_HISTORY_REWRITTEN = 'svc_sdk_history_rewritten';

/** The problem+json body as svc sends it; extension members (e.g. `errors`) are kept. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode | (string & {});
  [extension: string]: unknown;
}

export class SvcError extends Error {
  /** HTTP status of the answer. */
  readonly status: number;
  /**
   * The catalogue code (`svc_…`). A code newer than this SDK version is passed through as
   * the string the service sent.
   */
  readonly code: ErrorCode | (string & {});
  /** RFC 9457 `title`: short, stable summary of the code. */
  readonly title: string;
  /** RFC 9457 `detail`: what went wrong with this request. */
  readonly detail: string;
  /** RFC 9457 `type` (`https://svc.dev/errors#<code>`). */
  readonly type: string;
  /**
   * `X-Svc-Call-Id` when the gateway admitted the call (e.g. 502, 504, 408, 413): the call has
   * an outcome record and may be refunded. Null for refusals before admission (403, 429, 503…).
   */
  readonly callId: string | null;
  /** Response headers (lower-case names), e.g. `retry-after`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The whole problem body, with extension members such as `errors` (per-field validation). */
  readonly problem: Readonly<Problem>;
  /** Requests sent for this call, retries included. */
  readonly attempts: number;

  constructor(problem: Problem, options: { headers: Record<string, string>; callId: string | null; attempts: number; status: number }) {
    super(`${problem.code}: ${problem.detail}`);
    this.name = 'SvcError';
    this.status = options.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.callId = options.callId;
    this.headers = options.headers;
    this.problem = problem;
    this.attempts = options.attempts;
  }
}

export function isSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError;
}

/**
 * The problem in a response body, or null when it is not svc's problem+json: the media type
 * must be `application/problem+json` and the body an object with a string `code` of the form
 * `svc_…` (an upstream's own problem+json, with other codes, is the upstream's answer).
 */
export function parseProblem(contentType: string | null, text: string, status: number): Problem | null {
  if (contentType === null || !contentType.toLowerCase().startsWith(PROBLEM_CONTENT_TYPE)) return null;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const p = body as Record<string, unknown>;
  if (typeof p.code !== 'string' || !/^svc_[a-z0-9_]+$/.test(p.code)) return null;
  return {
    ...p,
    type: typeof p.type === 'string' ? p.type : 'about:blank',
    title: typeof p.title === 'string' ? p.title : '',
    status: typeof p.status === 'number' ? p.status : status,
    detail: typeof p.detail === 'string' ? p.detail : '',
    code: p.code,
  };
}
