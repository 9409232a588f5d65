/**
 * Per-client-address limit on application submissions: a fixed window of
 * `applications.submitLimitWindowS` seconds allowing `applications.submitLimitCount`
 * attempts (valid or not). Kept in memory; a restart forgets it.
 */
import { SvcError } from '../../protocol/errors';

/** Entries kept before expired windows are swept. @default 10000 */
export const LIMITER_SWEEP_AT = 10_000;

export class SubmitLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly count: number,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Count one attempt from `client`; throws 429 `svc_rate_limited` with `Retry-After` when over. */
  take(client: string): void {
    const now = this.now();
    if (this.windows.size >= LIMITER_SWEEP_AT) this.sweep(now);
    let window = this.windows.get(client);
    if (!window || now >= window.start + this.windowMs) {
      window = { start: now, count: 0 };
      this.windows.set(client, window);
    }
    if (window.count >= this.count) {
      const retryAfter = Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
      throw new SvcError('svc_rate_limited', `too many applications from this address; retry after ${retryAfter} s`, {
        headers: { 'retry-after': String(retryAfter) },
        extra: { retry_after_seconds: retryAfter },
      });
    }
    window.count += 1;
  }

  private sweep(now: number): void {
    for (const [client, window] of this.windows) if (now >= window.start + this.windowMs) this.windows.delete(client);
  }
}
