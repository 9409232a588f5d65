/**
 * The SQLite store's asynchronous seam. Callers see every table family as methods that answer
 * promises, on SQLite as on PostgreSQL; SQLite stays synchronous inside (better-sqlite3): a
 * call runs at once and answers an already-settled promise (`settled`).
 *
 * One connection serves every caller, so a transaction that spans awaits (`Store.mutate`,
 * `Store.read`) must not let other callers' statements into it: the `Gate` holds them until
 * it ends. Outside a transaction the gate is open and costs one settled promise per call.
 */

/** Run `fn` now and answer its result (or its throw) as a settled promise. */
export function settled<T>(fn: () => T): Promise<T> {
  // A throw in the executor rejects the promise.
  return new Promise<T>((resolve) => resolve(fn()));
}

/** Serialises transactions that span awaits on one connection; lets single calls through at once. */
export class Gate {
  private held: Promise<void> | null = null;

  /** Run `fn` now, or as soon as no transaction holds the connection. */
  run<T>(fn: () => T): Promise<T> {
    if (this.held === null) return settled(fn);
    return this.held.then(() => this.run(fn));
  }

  /** Run `fn` with the connection to itself: no other caller's statement runs until it settles. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.held !== null) await this.held;
    let release!: () => void;
    this.held = new Promise<void>((resolve) => (release = resolve));
    try {
      return await fn();
    } finally {
      this.held = null;
      release();
    }
  }
}
