/**
 * The PostgreSQL store's one way to run SQL. A `PgConn` runs statements on the pool (each
 * one autocommits on whichever connection is free) or, inside `tx`, on the one connection
 * that holds the transaction; table modules take a `PgConn` and never see which.
 *
 * Statements are written once, in the SQLite modules' parameter style, and compiled by `sql()`:
 * `?` placeholders become `$1, $2, …` in order, `@name` ones `$k` (a name used twice is one
 * parameter), and every statement gets a name, so each connection parses and plans it once
 * (a server-side prepared statement) and then only binds values. A statement compiled with
 * `replan` has no name: it is parsed and planned at each execution (`SqlOptions` says when).
 */
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { unreachable } from './unreachable';

/** A compiled statement: PostgreSQL text, its prepared-statement name, and how it takes parameters. */
export interface Sql {
  readonly text: string;
  /** Its prepared-statement name; undefined for a statement planned at each execution (`replan`). */
  readonly name: string | undefined;
  /** The `@name` parameters in `$k` order; empty for a `?` statement (parameters by position). */
  readonly names: readonly string[];
}

/** Parameters: by position for a `?` statement, by name for an `@name` one. */
export type Params = readonly unknown[] | Readonly<Record<string, unknown>>;

export interface SqlOptions {
  /**
   * Plan the statement at each execution, against the tables as they are then, instead of once
   * per connection. For statements on a table whose size swings faster than autovacuum's
   * ANALYZE follows it, the settler's queue (`unsettled_outcomes`): a prepared statement's plan
   * is kept until the table's statistics change, and one made while the queue was empty (a
   * vacuum truncates a drained queue to no pages at all) scans the whole queue at each
   * execution once hundreds of thousands of calls are queued, where an index seek reads a few
   * pages. Planning costs a fraction of a millisecond; the settler's own statements, run once
   * per batch, stay prepared under settings that rule such plans out instead
   * (`SETTLER_PLANNING`, `settlement-sql.ts`).
   */
  replan?: boolean;
}

const compiled = new Map<string, Sql>();

/**
 * Compile `text` (SQLite parameter style) for PostgreSQL. Mixing `?` and `@name` in one
 * statement is a programming error. Statements must not hold `?` or `@` inside string literals.
 */
export function sql(text: string, options: SqlOptions = {}): Sql {
  const key = options.replan === true ? `replan\0${text}` : text;
  const known = compiled.get(key);
  if (known !== undefined) return known;
  const names: string[] = [];
  let positional = 0;
  const out = text.replace(/\?|@([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string | undefined) => {
    if (name === undefined) {
      if (names.length > 0) throw new Error(`sql: statement mixes ? and @name parameters: ${text}`);
      return `$${++positional}`;
    }
    if (positional > 0) throw new Error(`sql: statement mixes ? and @name parameters: ${text}`);
    const at = names.indexOf(name);
    if (at >= 0) return `$${at + 1}`;
    names.push(name);
    return `$${names.length}`;
  });
  const name = options.replan === true ? undefined : `svc_${compiled.size + 1}`;
  const statement: Sql = Object.freeze({ text: out, name, names: Object.freeze(names) });
  compiled.set(key, statement);
  return statement;
}

function values(statement: Sql, params: Params | undefined): unknown[] {
  if (Array.isArray(params)) return params as unknown[];
  const named = (params ?? {}) as Readonly<Record<string, unknown>>;
  return statement.names.map((name) => {
    if (!(name in named)) throw new Error(`sql: missing parameter @${name} for: ${statement.text}`);
    return named[name];
  });
}

export type TxMode =
  /** Reads and writes, READ COMMITTED (PostgreSQL's default). */
  | 'write'
  /**
   * As `write`, after taking the store's writer lock (`WRITER_LOCK_KEY`): writers that read
   * before they write (admin changes, settlement) run one at a time, as SQLite's
   * `BEGIN IMMEDIATE` runs them, across every process on the database. Such a transaction
   * may sit idle `WRITER_IDLE_MS` at most.
   */
  | 'serial'
  /** One `REPEATABLE READ` snapshot for every statement, read-only. */
  | 'read';

/**
 * Key of the transaction-level advisory lock that serialises the store's read-then-write
 * transactions ("svc_wrt" in ASCII). Ingest does not take it: its inserts are idempotent by call id.
 */
export const WRITER_LOCK_KEY = '32499791499212404';

/**
 * How long a transaction holding the writer lock (`serial`: admin changes, settlement, the
 * receipts backfill) may sit idle before the server ends its session, and the lock with it
 * (`idle_in_transaction_session_timeout`, set for the transaction in the statement that opens
 * it, before the lock is taken). The lock's holders wait on nothing but their own statements,
 * the settler's reads ahead on its other connection and a few milliseconds of planning or
 * signing between them, so only a process that stopped running mid-transaction (frozen,
 * paused, cut off with its connection open) sits idle this long; every other control's admin
 * changes and settlement wait behind it for at most this, rather than the session's
 * `IDLE_IN_TRANSACTION_MS` (`store.ts`). @default 2000
 */
export const WRITER_IDLE_MS = 2_000;

function begin(mode: TxMode, writerIdleMs: number): string {
  if (mode === 'read') return 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';
  if (mode === 'write') return 'BEGIN';
  return `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${Math.max(1, Math.floor(writerIdleMs))}`;
}

export class PgConn {
  constructor(
    private readonly pool: Pool,
    /** The connection holding this transaction; null outside one. */
    private readonly client: PoolClient | null = null,
    private readonly mode: TxMode | null = null,
    /** How long a `serial` transaction may sit idle (`WRITER_IDLE_MS`). */
    private readonly writerIdleMs: number = WRITER_IDLE_MS,
  ) {}

  get inTransaction(): boolean {
    return this.client !== null;
  }

  private async query<R extends QueryResultRow>(statement: Sql, params: Params | undefined, rowMode?: 'array') {
    const config: QueryConfig = { name: statement.name, text: statement.text, values: values(statement, params) };
    if (rowMode) (config as QueryConfig & { rowMode: 'array' }).rowMode = rowMode;
    try {
      return await (this.client ?? this.pool).query<R>(config);
    } catch (err) {
      throw unreachable(err, this.pool);
    }
  }

  /** Every row. */
  async all<R>(statement: Sql, params?: Params): Promise<R[]> {
    return (await this.query<R & QueryResultRow>(statement, params)).rows;
  }

  /** Every row as an array of its columns in SELECT order. */
  async raw<R extends unknown[]>(statement: Sql, params?: Params): Promise<R[]> {
    return (await this.query<R & QueryResultRow>(statement, params, 'array')).rows;
  }

  /** The first row, or undefined. */
  async get<R>(statement: Sql, params?: Params): Promise<R | undefined> {
    return (await this.query<R & QueryResultRow>(statement, params)).rows[0];
  }

  /** The first column of the first row, or undefined when there is no row. */
  async value<V>(statement: Sql, params?: Params): Promise<V | undefined> {
    const rows = (await this.query<unknown[] & QueryResultRow>(statement, params, 'array')).rows;
    return rows.length === 0 ? undefined : (rows[0]![0] as V);
  }

  /** The first column of every row. */
  async column<V>(statement: Sql, params?: Params): Promise<V[]> {
    return (await this.query<unknown[] & QueryResultRow>(statement, params, 'array')).rows.map((row) => row[0] as V);
  }

  /** Run a write; answers the number of rows it changed. */
  async run(statement: Sql, params?: Params): Promise<number> {
    return (await this.query(statement, params)).rowCount ?? 0;
  }

  /**
   * Run `fn` holding the session-level advisory lock `key` on a connection of its own, outside
   * any transaction, so a long `fn` is not a transaction left idle (which the server ends after
   * `idle_in_transaction_session_timeout`): callers of the same key, in every process on the
   * database, take turns. `fn` runs its statements on the pool as usual. If the connection
   * ends meanwhile, the lock goes with it.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.checkedOut(async (client, broke) => {
      await client.query('SELECT pg_advisory_lock($1)', [key]);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(broke);
      }
    });
  }

  /**
   * Run `fn` in one transaction on one connection (its `PgConn`). Inside a transaction already,
   * `fn` joins it (a `serial` one is entered only from outside, so the lock is taken first).
   * A failed transaction rolls back; a connection whose rollback failed is closed, not reused.
   */
  async tx<T>(fn: (conn: PgConn) => Promise<T>, mode: TxMode = 'write'): Promise<T> {
    if (this.client !== null) {
      if (mode === 'serial' && this.mode !== 'serial') throw new Error('store: a serial transaction must start outside any other');
      return fn(this);
    }
    return this.checkedOut(async (client, broke) => {
      await client.query(begin(mode, this.writerIdleMs));
      try {
        if (mode === 'serial') await client.query('SELECT pg_advisory_xact_lock($1)', [WRITER_LOCK_KEY]);
        const out = await fn(new PgConn(this.pool, client, mode, this.writerIdleMs));
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(broke);
        throw err;
      }
    });
  }

  /**
   * Run `fn` on a connection of its own from the pool. Checked out, a client has no listener for
   * the end of its connection (the pool's is off): one ended between two statements (the server
   * restarted, the session was terminated) would be an unhandled 'error', fatal to the process.
   * Heard here, it fails `fn`'s next statement, and the client is not reused; nor is one `fn`
   * reports broken (`broke`: a failed rollback or unlock). A connection that cannot be made, and
   * a statement of `fn`'s own on `client` (`BEGIN`, a lock) that fails for want of the
   * database, throw `StoreUnavailableError` as every statement does (`unreachable.ts`).
   */
  private async checkedOut<T>(fn: (client: PoolClient, broke: (err: Error) => void) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw unreachable(err, this.pool);
    }
    let broken: Error | undefined;
    const broke = (err: Error) => {
      broken = err;
    };
    client.on('error', broke);
    try {
      return await fn(client, broke);
    } catch (err) {
      throw unreachable(err, this.pool);
    } finally {
      client.off('error', broke);
      client.release(broken);
    }
  }
}
