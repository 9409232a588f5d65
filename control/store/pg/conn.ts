/**
 * The PostgreSQL store's `Conn` (`../conn.ts`). A `PgConn` runs statements on the pool (each
 * one autocommits on whichever connection is free) or, inside `tx`, on the one connection
 * that holds the transaction; table families take a `Conn` and never see which. Statements
 * run as named prepared statements (`sql()`), so each connection parses and plans one once
 * and then only binds values, except those compiled with `replan`.
 */
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { sql as compile, type Conn, type DialectText, type Params, type Sql, type SqlOptions, type TxMode } from '../conn';
import { unreachable } from './unreachable';

export type { Params, Sql, TxMode } from '../conn';

/** `sql()` for the PostgreSQL store's own statements (modules under `pg/`): SQLite refuses them. */
export const sql = (text: string | DialectText, options: SqlOptions = {}): Sql => compile(text, { ...options, pgOnly: true });

function values(statement: Sql, params: Params | undefined): unknown[] {
  if (Array.isArray(params)) return params as unknown[];
  const named = (params ?? {}) as Readonly<Record<string, unknown>>;
  return statement.names.map((name) => {
    if (!(name in named)) throw new TypeError(`sql: missing parameter @${name} for: ${statement.text}`);
    return named[name];
  });
}

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

export class PgConn implements Conn {
  readonly dialect = 'pg' as const;

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
      if (mode === 'serial' && this.mode !== 'serial') throw new TypeError('store: a serial transaction must start outside any other');
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
