/**
 * Per-client-address limits on application submissions, in fixed windows of
 * `applications.submitLimitWindowS` seconds. Two counts per address, kept apart:
 *
 * - `submit`: submissions that passed validation and were stored (or recognised as a
 *   duplicate), at most `applications.submitLimitCount` per window;
 * - `invalid`: submissions refused as invalid, at most `applications.invalidLimitCount` (a
 *   looser limit), so a person who mistypes a field is not locked out of sending the
 *   corrected answers, while a client that sends nothing but garbage still is.
 *
 * An address over either count gets 429 `svc_rate_limited` with `Retry-After` before its
 * body is read, and `RateLimit-Policy` / `RateLimit` naming the count it used up
 * (`"applications"` or `"applications-invalid"`, IETF draft 11, as every other 429 has them).
 * Kept in memory; a restart forgets it.
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */
import { SvcError } from '../../protocol/errors';

/** Entries kept before expired windows are swept. @default 10000 */
export const LIMITER_SWEEP_AT = 10_000;

/** Which count a submission goes to. */
export type SubmissionKind = 'submit' | 'invalid';

interface Window {
  start: number;
  submit: number;
  invalid: number;
}

export interface SubmitLimits {
  /** Valid submissions per window. */
  submitCount: number;
  /** Invalid submissions per window. */
  invalidCount: number;
  windowMs: number;
}

export class SubmitLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limits: SubmitLimits,
    private readonly now: () => number,
  ) {}

  /**
   * Refuse `client` when it has used up either count in the current window; counts nothing.
   * Throws 429 `svc_rate_limited` with `Retry-After`.
   */
  check(client: string): void {
    const now = this.now();
    const window = this.current(client, now);
    if (window && window.submit >= this.limits.submitCount) throw this.refusal(window, now, 'submit');
    if (window && window.invalid >= this.limits.invalidCount) throw this.refusal(window, now, 'invalid');
  }

  /**
   * Count one submission of `kind` from `client`; throws 429 `svc_rate_limited` with
   * `Retry-After` (counting nothing) when that count is used up.
   */
  take(client: string, kind: SubmissionKind): void {
    const now = this.now();
    if (this.windows.size >= LIMITER_SWEEP_AT) this.sweep(now);
    let window = this.current(client, now);
    if (!window) {
      window = { start: now, submit: 0, invalid: 0 };
      this.windows.set(client, window);
    }
    const max = kind === 'submit' ? this.limits.submitCount : this.limits.invalidCount;
    if (window[kind] >= max) throw this.refusal(window, now, kind);
    window[kind] += 1;
  }

  private current(client: string, now: number): Window | undefined {
    const window = this.windows.get(client);
    return window && now < window.start + this.limits.windowMs ? window : undefined;
  }

  private refusal(window: Window, now: number, kind: SubmissionKind): SvcError {
    const retryAfter = Math.max(1, Math.ceil((window.start + this.limits.windowMs - now) / 1000));
    const policy = kind === 'submit' ? '"applications"' : '"applications-invalid"';
    const quota = kind === 'submit' ? this.limits.submitCount : this.limits.invalidCount;
    return new SvcError('svc_rate_limited', `too many applications from this address; retry after ${retryAfter} s`, {
      headers: {
        'retry-after': String(retryAfter),
        'ratelimit-policy': `${policy};q=${quota};w=${Math.round(this.limits.windowMs / 1000)}`,
        ratelimit: `${policy};r=0;t=${retryAfter}`,
      },
      extra: { retry_after_seconds: retryAfter },
    });
  }

  private sweep(now: number): void {
    for (const [client, window] of this.windows) if (now >= window.start + this.limits.windowMs) this.windows.delete(client);
  }
}
