/**
 * Retry decisions, kept apart from I/O so they can be tested on their own.
 *
 * Safe to retry (the gateway refused before forwarding, or no connection was made): 429
 * `svc_rate_limited`, 503 `svc_maintenance` and `svc_gateway_not_ready`, connection refused or
 * not resolved. The wait is what the answer asks for (`Retry-After`, or the `t=` of the
 * exhausted `RateLimit` item, whichever is later), or exponential backoff when it names none,
 * plus jitter; never earlier than the server asked.
 *
 * Unsafe (the call may have reached the upstream, which may have acted on it): 502
 * `svc_upstream_unavailable`, 504 `svc_upstream_timeout`, a connection lost after the request
 * was sent. Retried only with `retry.unsafe: true` (reply-from and undici do not retry a POST
 * either: a payment call must not run twice because a network blinked).
 *
 * @see RFC 9110 §10.2.3 (Retry-After)
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */
import { configError } from './errors';

export interface RetryOptions {
  /** Retries after the first attempt (0 turns retrying off). @default 3 */
  max?: number | undefined;
  /**
   * Also retry calls that may have reached the upstream: 502, 504, and network errors after
   * the request was sent. Only for calls that are safe to run twice. @default false
   */
  unsafe?: boolean | undefined;
  /** Share of the wait added at random: a wait is `base × (1 + jitter × random())`. @default 0.25 */
  jitter?: number | undefined;
  /** Backoff when the answer names no wait: `baseDelayMs × 2^retry`. @default 250 */
  baseDelayMs?: number | undefined;
  /** Longest wait before a retry; an answer that asks for longer is not retried. @default 60000 */
  maxDelayMs?: number | undefined;
}

export const DEFAULT_RETRY_MAX = 3;
export const DEFAULT_RETRY_JITTER = 0.25;
export const DEFAULT_RETRY_BASE_DELAY_MS = 250;
export const DEFAULT_RETRY_MAX_DELAY_MS = 60_000;

export type RetryPolicy = { readonly [K in keyof RetryOptions]-?: Exclude<RetryOptions[K], undefined> };

function check(name: string, value: number, min: number, max: number, integer: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw configError(`retry.${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
  }
  return value;
}

/** Options with their defaults, checked. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  if (typeof options !== 'object' || options === null) throw configError('retry must be an object of options');
  return Object.freeze({
    max: check('max', options.max ?? DEFAULT_RETRY_MAX, 0, 100, true),
    unsafe: options.unsafe === true,
    jitter: check('jitter', options.jitter ?? DEFAULT_RETRY_JITTER, 0, 10, false),
    baseDelayMs: check('baseDelayMs', options.baseDelayMs ?? DEFAULT_RETRY_BASE_DELAY_MS, 0, 3_600_000, false),
    maxDelayMs: check('maxDelayMs', options.maxDelayMs ?? DEFAULT_RETRY_MAX_DELAY_MS, 0, 86_400_000, false),
  });
}

/** `Retry-After` in ms: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); null when absent or invalid. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) && /[a-z]/i.test(v) ? Math.max(0, at - now) : null;
}

/** Split a structured-field list on commas outside quoted strings. */
function listItems(value: string): string[] {
  const items: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted && c === '\\') {
      current += c + (value[++i] ?? '');
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ',' && !quoted) {
      items.push(current);
      current = '';
    } else current += c;
  }
  items.push(current);
  return items.map((s) => s.trim()).filter(Boolean);
}

/**
 * ms until the exhausted quota of a `RateLimit` header resets: the largest `t` among items
 * with `r=0` (`"key";r=0;t=3` → 3000). Null when no item is exhausted or the header is absent.
 */
export function parseRateLimitReset(value: string | null): number | null {
  if (value === null) return null;
  let reset: number | null = null;
  for (const item of listItems(value)) {
    const params = new Map<string, string>();
    for (const part of item.split(';').slice(1)) {
      const eq = part.indexOf('=');
      if (eq > 0) params.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
    const r = params.get('r');
    const t = params.get('t');
    if (r === undefined || t === undefined || !/^\d{1,9}$/.test(r) || !/^\d{1,9}$/.test(t)) continue;
    if (Number(r) === 0) reset = Math.max(reset ?? 0, Number(t) * 1000);
  }
  return reset;
}

/** The wait an answer asks for: the later of `Retry-After` and the exhausted `RateLimit` reset. */
export function serverWaitMs(headers: { get(name: string): string | null }, now: number): number | null {
  const retryAfter = parseRetryAfter(headers.get('retry-after'), now);
  const reset = parseRateLimitReset(headers.get('ratelimit'));
  if (retryAfter === null) return reset;
  if (reset === null) return retryAfter;
  return Math.max(retryAfter, reset);
}

/**
 * Why an attempt failed, as far as retrying goes:
 * - `refused`: the gateway refused before forwarding (429, 503); `waitMs` is what it asked for.
 * - `unsent`: no connection was made (refused, host not resolved), so nothing was sent.
 * - `maybe-sent`: the request may have reached the upstream (502, 504, connection lost).
 * - `final`: an answer that no retry would change (403, 404, 400…).
 */
export type Failure = { kind: 'refused'; waitMs: number | null } | { kind: 'unsent' } | { kind: 'maybe-sent' } | { kind: 'final' };

/**
 * How long to wait before retry number `retriesDone + 1`, or null for no retry. The caller
 * also checks the wait against its own deadline.
 */
export function retryDelay(policy: RetryPolicy, failure: Failure, retriesDone: number, random: () => number): number | null {
  if (failure.kind === 'final' || retriesDone >= policy.max) return null;
  if (failure.kind === 'maybe-sent' && !policy.unsafe) return null;
  const asked = failure.kind === 'refused' ? failure.waitMs : null;
  const base = asked ?? policy.baseDelayMs * 2 ** retriesDone;
  if (asked !== null && asked > policy.maxDelayMs) return null;
  const jittered = base * (1 + policy.jitter * Math.min(1, Math.max(0, random())));
  return Math.ceil(Math.max(base, Math.min(policy.maxDelayMs, jittered)));
}

/** Error codes of a failed connection attempt: nothing was sent. */
const UNSENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The system or undici error code behind a fetch rejection (`TypeError: fetch failed`, cause …). */
export function networkErrorCode(err: unknown): string | null {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** A network error (not an abort) classified for retrying. */
export function networkFailure(err: unknown): Failure {
  const code = networkErrorCode(err);
  return code !== null && UNSENT_CODES.has(code) ? { kind: 'unsent' } : { kind: 'maybe-sent' };
}
