/**
 * `--wait` (`POST /_admin/v1/sync/wait`): callers waiting until every connected gateway has
 * applied a state version, or until their timeout. The hub says which gateways are behind.
 */
import type { WaitResult } from '../../protocol/gateways';

interface Waiter {
  version: number;
  started: number;
  resolve: (result: WaitResult) => void;
  timer: NodeJS.Timeout;
}

export class VersionWaiters {
  private readonly waiters = new Set<Waiter>();

  /** `pending(version)`: the connected gateways that have not applied it; `connected()`: how many there are. */
  constructor(
    private readonly pending: (version: number) => string[],
    private readonly connected: () => number,
  ) {}

  /** Resolve once every connected gateway has applied `version`, or after `timeoutMs`. */
  wait(version: number, timeoutMs: number): Promise<WaitResult> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        version,
        started: Date.now(),
        resolve,
        timer: setTimeout(() => this.finish(waiter, false), timeoutMs),
      };
      this.waiters.add(waiter);
      this.check();
    });
  }

  /** Release the waiters whose version every connected gateway has applied (after an ack, a nack or a disconnect). */
  check(): void {
    for (const waiter of this.waiters) if (this.pending(waiter.version).length === 0) this.finish(waiter, true);
  }

  /** End every wait as incomplete. */
  close(): void {
    for (const waiter of this.waiters) this.finish(waiter, false);
  }

  private finish(waiter: Waiter, complete: boolean): void {
    if (!this.waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve({
      version: waiter.version,
      complete,
      gateways: this.connected(),
      pending: complete ? [] : this.pending(waiter.version),
      waited_ms: Date.now() - waiter.started,
    });
  }
}
