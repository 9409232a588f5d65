/**
 * `SvcError`: what every failure of the SDK rejects with. Either svc answered with an RFC 9457
 * problem+json body (`{type, title, status, detail, code}`), or the SDK raises one of its own
 * `svc_sdk_…` codes (configuration, network, timeout, size, malformed answer; `codes.ts`),
 * shaped the same way. Match on `code` (one of the exported constants, e.g.
 * `SVC_AUTH_NOT_IN_BETA`, `SVC_SDK_TIMEOUT`), never on `title` or `detail`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */
import { ERROR_CATALOGUE, type ErrorCode, type SdkErrorCode } from './codes';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

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
  /** HTTP status of the answer; 0 for an SDK code raised without one (network, timeout, configuration). */
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
  /** Requests sent for this call, retries included (0 when none was). */
  readonly attempts: number;
  /**
   * On `svc_payment_required` (402, a prepaid endpoint): the premium the call needs, what the
   * gateway holds of the account, and the account's id (deposit into it, then retry; the
   * balance is `client.account()`). Undefined on every other error.
   */
  readonly required: number | undefined;
  readonly available: number | undefined;
  readonly accountId: string | undefined;

  constructor(
    problem: Problem,
    options: { headers: Record<string, string>; callId: string | null; attempts: number; status: number; cause?: unknown },
  ) {
    super(`${problem.code}: ${problem.detail}`, options.cause === undefined ? undefined : { cause: options.cause });
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
    const payment = problem.code === 'svc_payment_required';
    this.required = payment && typeof problem.required === 'number' ? problem.required : undefined;
    this.available = payment && typeof problem.available === 'number' ? problem.available : undefined;
    this.accountId = payment && typeof problem.account_id === 'string' ? problem.account_id : undefined;
  }
}

export function isSvcError(err: unknown): err is SvcError {
  return err instanceof SvcError;
}

/** What an SDK-raised error knows beyond its code and detail. */
export interface SdkErrorContext {
  /** Status of the answer that caused it, when one arrived. */
  status?: number;
  callId?: string | null;
  headers?: Record<string, string>;
  attempts?: number;
  /** The underlying error (a network error's system error, a parse error…). */
  cause?: unknown;
}

/** An `SvcError` with one of the SDK's own codes, shaped like svc's problem+json. */
export function sdkError(code: SdkErrorCode, detail: string, context: SdkErrorContext = {}): SvcError {
  const status = context.status ?? 0;
  const problem: Problem = { type: `https://svc.dev/errors#${code}`, title: ERROR_CATALOGUE[code].title, status, detail, code };
  return new SvcError(problem, {
    headers: context.headers ?? {},
    callId: context.callId ?? null,
    attempts: context.attempts ?? 0,
    status,
    ...(context.cause === undefined ? {} : { cause: context.cause }),
  });
}

/** A configuration mistake, thrown before anything is sent. */
export function configError(detail: string): SvcError {
  return sdkError('svc_sdk_config', detail);
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
