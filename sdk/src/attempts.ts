/**
 * The attempt loop shared by gateway calls and public reads: one deadline (`timeoutMs`)
 * over every attempt, wait and body, the caller's `AbortSignal`, and a retry decision per
 * failed attempt (`retry.ts`). A retry is never started when its wait would end past the
 * deadline; the last failure is thrown instead. Every failure comes out as an `SvcError`: the
 * deadline as `svc_sdk_timeout`, a network failure as `svc_sdk_network` (its `cause` the
 * system error); only the caller's own abort rejects with the caller's reason.
 */
import { systemTimer, type Clock } from './clock';
import { SvcError, sdkError } from './errors';
import { checkTimeout } from './limits';
import { networkErrorCode, networkFailure, retryDelay, type Failure, type RetryPolicy } from './retry';

/** What one attempt came to: a value, or a failure that may be retried (else `error` is thrown). */
export type AttemptResult<T> = { ok: true; value: T } | { ok: false; failure: Failure; error: unknown };

export interface AttemptOptions {
  policy: RetryPolicy;
  clock: Clock;
  random: () => number;
  signal?: AbortSignal | undefined;
  /** The deadline in ms (0: none). */
  timeoutMs: number;
  /** GET and HEAD: a lost connection may be retried, the request changes nothing. */
  idempotent: boolean;
}

/** A rejection of `fetch` caused by the network (not by a bad argument or an abort). */
function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError && (err.message === 'fetch failed' || networkErrorCode(err) !== null);
}

/** What a network failure comes out as: `cause` is the system error behind fetch's `TypeError`. */
function networkError(err: unknown, attempts: number): SvcError {
  const cause = err instanceof TypeError && err.cause !== undefined ? err.cause : err;
  const code = networkErrorCode(err);
  const what = err instanceof Error ? err.message : String(err);
  return sdkError('svc_sdk_network', `the request failed on the network${code === null ? '' : ` (${code})`}: ${what}`, { attempts, cause });
}

/**
 * Any other rejection of `fetch`: a `TypeError` that is not the network's is fetch refusing
 * the request as given (a GET with a body, a bad header value): a configuration mistake.
 * Anything else is the transport's (a custom `fetch` that failed its own way).
 */
function refusedByFetch(err: unknown, attempts: number): SvcError {
  const what = err instanceof Error ? err.message : String(err);
  if (err instanceof TypeError) return sdkError('svc_sdk_config', `fetch refused the request: ${what}`, { attempts, cause: err });
  return sdkError('svc_sdk_network', `the request failed: ${what}`, { attempts, cause: err });
}

/**
 * Run `attempt` (given the combined abort signal and the attempt number, from 1) until it
 * succeeds, fails for good, or retries run out. The deadline rejects with `svc_sdk_timeout`;
 * the caller's abort with its signal's reason.
 */
export async function withRetries<T>(
  opts: AttemptOptions,
  attempt: (signal: AbortSignal, n: number) => Promise<AttemptResult<T>>,
): Promise<T> {
  const timeoutMs = checkTimeout('timeoutMs', opts.timeoutMs);
  const { signal, clock } = opts;
  if (signal?.aborted) throw signal.reason;
  const controller = new AbortController();
  const deadline = timeoutMs === 0 ? null : clock.now() + timeoutMs;
  let n = 0;
  const onAbort = () => controller.abort(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const cancelTimer =
    timeoutMs === 0
      ? undefined
      : (clock.timer ?? systemTimer)(timeoutMs, () =>
          controller.abort(
            sdkError('svc_sdk_timeout', `no complete answer within timeoutMs (${timeoutMs} ms), retries included`, { attempts: n }),
          ),
        );
  try {
    for (n = 1; ; n++) {
      let result: AttemptResult<T>;
      try {
        result = await attempt(controller.signal, n);
      } catch (err) {
        if (controller.signal.aborted) throw controller.signal.reason;
        if (err instanceof SvcError) throw err;
        if (!isNetworkError(err)) throw refusedByFetch(err, err instanceof TypeError ? n - 1 : n);
        const failure = networkFailure(err);
        result = {
          ok: false,
          failure: opts.idempotent && failure.kind === 'maybe-sent' ? { kind: 'unsent' } : failure,
          error: networkError(err, n),
        };
      }
      if (result.ok) return result.value;
      const delay = retryDelay(opts.policy, result.failure, n - 1, opts.random);
      if (delay === null || (deadline !== null && clock.now() + delay >= deadline)) throw result.error;
      await clock.sleep(delay, controller.signal);
    }
  } finally {
    cancelTimer?.();
    signal?.removeEventListener('abort', onAbort);
    // Whatever is still open of this request (a body left unread after a refusal) is closed.
    if (!controller.signal.aborted) controller.abort();
  }
}
