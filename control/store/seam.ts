/**
 * The store's asynchronous seam. Callers see every table family as methods that answer
 * promises (`Async<T>`), so a store on a network database (PostgreSQL) can sit behind the same
 * interface as the embedded SQLite one. The SQLite store stays synchronous inside
 * (better-sqlite3): a call runs at once and answers an already-settled promise.
 *
 * One connection serves every caller, so a transaction that spans awaits (`Store.mutate`,
 * `Store.read`) must not let other callers' statements into it: the `Gate` holds them until
 * it ends. Outside a transaction the gate is open and costs one settled promise per call.
 */

/** The methods of `T`, each answering a promise of what it returned. Fields are left out. */
export type Async<T> = {
  readonly [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

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

/** Every method name of `table`'s class (and its base classes), constructor and private-by-convention `_x` left out. */
function methodNames(table: object): string[] {
  const names = new Set<string>();
  for (let proto: object | null = Object.getPrototypeOf(table) as object | null; proto && proto !== Object.prototype;) {
    for (const [name, desc] of Object.entries(Object.getOwnPropertyDescriptors(proto))) {
      if (name !== 'constructor' && !name.startsWith('_') && typeof desc.value === 'function') names.add(name);
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return [...names];
}

/**
 * `table`'s methods as `Async` ones. With a `gate`, each call waits for a running transaction
 * to end (calls from outside one); without, it runs at once (calls from inside one).
 */
export function asyncTable<T extends object>(table: T, gate: Gate | null): Async<T> {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const name of methodNames(table)) {
    const method = (table as Record<string, (...args: unknown[]) => unknown>)[name]!;
    out[name] = gate ? (...args) => gate.run(() => method.apply(table, args)) : (...args) => settled(() => method.apply(table, args));
  }
  return Object.freeze(out) as unknown as Async<T>;
}
