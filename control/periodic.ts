/**
 * A control's periodic pass (admin/refills.ts, admin/withdrawals.ts, coverage.ts): one now, then one every `intervalMs`,
 * one at a time, until stopped. A failing pass (the store unreachable, say) is logged once
 * until a pass works again.
 */
import type { ControlContext } from './context';

/** A periodic pass of one control. */
export interface PeriodicLoop<T> {
  /** A pass now (the loop's next one is not moved); what admin routes and tests call. */
  runOnce(): Promise<T>;
  stop(): Promise<void>;
}

export function startPeriodic<T>(ctx: ControlContext, what: string, run: () => Promise<T>, intervalMs: number): PeriodicLoop<T> {
  let running: Promise<unknown> = Promise.resolve();
  let lastError: string | null = null;
  const pass = (): Promise<T> => {
    const next = running.then(run);
    running = next.then(
      () => {
        lastError = null;
      },
      (err: unknown) => {
        const message = err instanceof Error ? err.message : String(err);
        if (message !== lastError) ctx.log.warn(`${what} pass failed`, { err });
        lastError = message;
      },
    );
    return next;
  };
  void pass().catch(() => undefined);
  const timer = setInterval(() => void pass().catch(() => undefined), intervalMs);
  timer.unref();
  return {
    runOnce: pass,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
