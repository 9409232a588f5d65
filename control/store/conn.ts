/**
 * The one way the store's table families run SQL, whichever database is under them. A family
 * is written once, against `Conn`: its statements are compiled once by `sql()`, for both
 * dialects, and run through the connection it was built on, which is SQLite's
 * (`sqlite-conn.ts`: better-sqlite3, synchronous inside, each call answering a settled
 * promise) or PostgreSQL's (`pg/conn.ts`: the pool, or one transaction's connection). A family
 * never sees which, nor whether it runs inside a transaction.
 *
 * Statements are written in the parameter style both drivers read, `?` by position or `@name`
 * by name. better-sqlite3 reads it as it is; for PostgreSQL `?` placeholders become `$1, $2, …`
 * in order, `@name` ones `$k` (a name used twice is one parameter), and every statement gets a
 * name, so each PostgreSQL connection parses and plans it once (a server-side prepared
 * statement) and then only binds values; SQLite prepares each statement once per connection.
 * Where the dialects differ (`min`/`LEAST`, `json_each`/`ANY(?::text[])`, `INSERT OR IGNORE`/
 * `ON CONFLICT DO NOTHING`), `sql({ sqlite, pg })` takes one text for each, side by side.
 */

/** A compiled statement: the text each dialect runs, its prepared-statement name, and how it takes parameters. */
export interface Sql {
  /** The statement as SQLite runs it (the text as written). */
  readonly sqlite: string;
  /** The statement as PostgreSQL runs it (`$k` placeholders). */
  readonly text: string;
  /** Its PostgreSQL prepared-statement name; undefined for a statement planned at each execution (`replan`). */
  readonly name: string | undefined;
  /** The `@name` parameters in `$k` order; empty for a `?` statement (parameters by position). */
  readonly names: readonly string[];
  /** `SqlOptions.walks`. */
  readonly walks: boolean;
  /** `SqlOptions.pgOnly`. */
  readonly pgOnly: boolean;
}

/** Parameters: by position for a `?` statement, by name for an `@name` one. */
export type Params = readonly unknown[] | Readonly<Record<string, unknown>>;

export interface SqlOptions {
  /**
   * On PostgreSQL, plan the statement at each execution, against the tables as they are then,
   * instead of once per connection. For statements on a table whose size swings faster than
   * autovacuum's ANALYZE follows it, the settler's queue (`unsettled_outcomes`): a prepared
   * statement's plan is kept until the table's statistics change, and one made while the queue
   * was empty (a vacuum truncates a drained queue to no pages at all) scans the whole queue at
   * each execution once hundreds of thousands of calls are queued, where an index seek reads a
   * few pages. Planning costs a fraction of a millisecond; the settler's own statements, run
   * once per batch, stay prepared under settings that rule such plans out instead
   * (`SETTLER_PLANNING`, `sql/settlement.ts`).
   */
  replan?: boolean;
  /**
   * The statement reads whole tables on purpose: one of `ledger verify`'s checks, an operator's
   * audit, not a hot path. Every other statement over the outcome tables must read them through
   * an index (`test/control/outcomes-plans.ts` checks each one compiled).
   */
  walks?: boolean;
  /** Only PostgreSQL runs the statement (a module under `pg/`): SQLite refuses it. */
  pgOnly?: boolean;
}

/** One statement's text for each dialect, where they differ. */
export interface DialectText {
  sqlite: string;
  pg: string;
}

const compiled = new Map<string, Sql>();

/** PostgreSQL's text for `text` (in the shared parameter style), and its `@name` parameters. */
function pgText(text: string): { text: string; names: string[] } {
  const names: string[] = [];
  let positional = 0;
  const out = text.replace(/\?|@([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string | undefined) => {
    if (name === undefined) {
      if (names.length > 0) throw new TypeError(`sql: statement mixes ? and @name parameters: ${text}`);
      return `$${++positional}`;
    }
    if (positional > 0) throw new TypeError(`sql: statement mixes ? and @name parameters: ${text}`);
    const at = names.indexOf(name);
    if (at >= 0) return `$${at + 1}`;
    names.push(name);
    return `$${names.length}`;
  });
  return { text: out, names };
}

/**
 * Compile a statement for both dialects: one text both run, or one each. Mixing `?` and
 * `@name` in one statement is a programming error (a `TypeError` when the module loads).
 * Statements must not hold `?` or `@` inside string literals.
 */
export function sql(text: string | DialectText, options: SqlOptions = {}): Sql {
  const sqlite = typeof text === 'string' ? text : text.sqlite;
  const pg = typeof text === 'string' ? text : text.pg;
  const walks = options.walks === true;
  const pgOnly = options.pgOnly === true;
  const key = `${options.replan === true ? 'replan' : ''}${walks ? 'walks' : ''}${pgOnly ? 'pg' : ''}\0${sqlite}\0${pg}`;
  const known = compiled.get(key);
  if (known !== undefined) return known;
  const forPg = pgText(pg);
  const name = options.replan === true ? undefined : `svc_${compiled.size + 1}`;
  const statement: Sql = Object.freeze({ sqlite, text: forPg.text, name, names: Object.freeze(forPg.names), walks, pgOnly });
  compiled.set(key, statement);
  return statement;
}

/** Every statement compiled so far in this process (each module's, once it is loaded). */
export function compiledStatements(): readonly Sql[] {
  return [...compiled.values()];
}

export type TxMode =
  /** Reads and writes (PostgreSQL: READ COMMITTED, its default; SQLite: `BEGIN IMMEDIATE`). */
  | 'write'
  /**
   * As `write`, after taking the store's writer lock: writers that read before they write
   * (admin changes, settlement) run one at a time, across every process on the database
   * (PostgreSQL: an advisory lock, `pg/conn.ts`; SQLite: `BEGIN IMMEDIATE` already is one).
   */
  | 'serial'
  /** One snapshot for every statement, read-only (PostgreSQL: `REPEATABLE READ`; SQLite: a deferred `BEGIN`). */
  | 'read';

/** A connection a table family runs its statements on: outside a transaction, or inside one. */
export interface Conn {
  readonly dialect: 'sqlite' | 'pg';
  /** Whether this connection is one transaction's. */
  readonly inTransaction: boolean;
  /** Every row. */
  all<R>(statement: Sql, params?: Params): Promise<R[]>;
  /** Every row as an array of its columns in SELECT order. */
  raw<R extends unknown[]>(statement: Sql, params?: Params): Promise<R[]>;
  /** The first row, or undefined. */
  get<R>(statement: Sql, params?: Params): Promise<R | undefined>;
  /** The first column of the first row, or undefined when there is no row. */
  value<V>(statement: Sql, params?: Params): Promise<V | undefined>;
  /** The first column of every row. */
  column<V>(statement: Sql, params?: Params): Promise<V[]>;
  /** Run a write; answers the number of rows it changed. */
  run(statement: Sql, params?: Params): Promise<number>;
  /** Run `fn` in one transaction (its `Conn`); inside one already, `fn` joins it. */
  tx<T>(fn: (conn: Conn) => Promise<T>, mode?: TxMode): Promise<T>;
}
