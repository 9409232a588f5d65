/**
 * Time as the SDK sees it: the current time for retry decisions, a sleep that an
 * `AbortSignal` cuts short, and the timer of a request's deadline. Injectable (`new SvcClient({ clock })`) so retry timing can be
 * tested without waiting.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolve after `ms` milliseconds; reject with `signal.reason` when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Run `fire` once `ms` milliseconds have passed (a request's deadline); returns a function that
   * cancels it. Optional: a clock without it keeps deadlines on the system's timers.
   */
  timer?(ms: number, fire: () => void): () => void;
}

/** The system's timer, for clocks that bring none. */
export function systemTimer(ms: number, fire: () => void): () => void {
  const handle = setTimeout(fire, ms);
  return () => clearTimeout(handle);
}

export const systemClock: Clock = {
  now: () => Date.now(),
  timer: systemTimer,
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the contract: reject with the signal's own reason, as fetch does
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the signal's own reason, as above
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
