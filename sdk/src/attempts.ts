/**
 * The attempt loop shared by gateway calls and public reads: one deadline (`timeoutMs`)
 * over every attempt and wait, the caller's `AbortSignal`, and a retry decision per failed
 * attempt (`retry.ts`). A retry is never started when its wait would end past the deadline;
 * the last failure is thrown instead.
 */
import type { Clock } from './clock';
import { networkErrorCode, networkFailure, retryDelay, type Failure, type RetryPolicy } from './retry';

/** What one attempt came to: a value, or a failure that may be retried (else `error` is thrown). */
export type AttemptResult<T> = { ok: true; value: T } | { ok: false; failure: Failure; error: unknown };

export interface AttemptOptions {
  policy: RetryPolicy;
  clock: Clock;
  random: () => number;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  /** GET and HEAD: a lost connection may be retried, the request changes nothing. */
  idempotent: boolean;
}

/** A rejection of `fetch` caused by the network (not by a bad argument or an abort). */
function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError && (err.message === 'fetch failed' || networkErrorCode(err) !== null);
}

export function checkTimeout(timeoutMs: number | undefined): void {
  if (timeoutMs === undefined) return;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) {
    throw new TypeError('timeoutMs must be a positive integer (milliseconds)');
  }
}

/**
 * Run `attempt` (given the combined abort signal and the attempt number, from 1) until it
 * succeeds, fails for good, or retries run out. Aborts reject with the signal's reason: the
 * caller's, or a `TimeoutError` `DOMException` when `timeoutMs` passes.
 */
export async function withRetries<T>(
  opts: AttemptOptions,
  attempt: (signal: AbortSignal, n: number) => Promise<AttemptResult<T>>,
): Promise<T> {
  checkTimeout(opts.timeoutMs);
  const { signal, timeoutMs, clock } = opts;
  if (signal?.aborted) throw signal.reason;
  const controller = new AbortController();
  const deadline = timeoutMs === undefined ? null : clock.now() + timeoutMs;
  const onAbort = () => controller.abort(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => controller.abort(new DOMException(`svc request timed out after ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  try {
    for (let n = 1; ; n++) {
      let result: AttemptResult<T>;
      try {
        result = await attempt(controller.signal, n);
      } catch (err) {
        if (controller.signal.aborted) throw controller.signal.reason;
        if (!isNetworkError(err)) throw err;
        const failure = networkFailure(err);
        result = { ok: false, failure: opts.idempotent && failure.kind === 'maybe-sent' ? { kind: 'unsent' } : failure, error: err };
      }
      if (result.ok) return result.value;
      const delay = retryDelay(opts.policy, result.failure, n - 1, opts.random);
      if (delay === null || (deadline !== null && clock.now() + delay >= deadline)) throw result.error;
      await clock.sleep(delay, controller.signal);
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
