/**
 * The SQLite store's `Conn` (`conn.ts`): better-sqlite3 on the store's one connection,
 * synchronous inside. Each statement is prepared once per connection (in each of the shapes
 * it is read in: rows, arrays, first column) and each call answers an already-settled promise.
 *
 * Outside a transaction a call waits at the `Gate` while a transaction spanning awaits holds
 * the connection (`seam.ts`); inside one (the `Conn` that `tx` hands its function) it runs at
 * once.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db';
import type { Conn, Params, Sql, TxMode } from './conn';
import { Gate, settled } from './seam';
import { InvariantError } from '../../protocol/coded-error';

interface Prepared {
  rows?: Statement;
  arrays?: Statement;
  first?: Statement;
}

type Shape = keyof Prepared;

/** A statement's arguments: positional parameters spread (binding them from one array costs better-sqlite3 more), named ones as their object. */
function bind(params: Params | undefined): readonly unknown[] {
  return params === undefined ? [] : Array.isArray(params) ? params : [params];
}

export class SqliteConn implements Conn {
  readonly dialect = 'sqlite' as const;

  /**
   * @param gate The gate of the store's connection; null for a connection nobody else shares
   *   (the snapshot reader's) or for one transaction's `Conn`.
   * @param inTransaction Whether this `Conn` is one transaction's (handed out by `tx`).
   */
  constructor(
    private readonly db: Db,
    private readonly gate: Gate | null,
    readonly inTransaction = false,
    private readonly prepared = new WeakMap<Sql, Prepared>(),
  ) {}

  /** This connection as one transaction's `Conn` sees it (sharing its prepared statements). */
  inside(): SqliteConn {
    return new SqliteConn(this.db, null, true, this.prepared);
  }

  private statement(sql: Sql, shape: Shape): Statement {
    let entry = this.prepared.get(sql);
    if (entry === undefined) this.prepared.set(sql, (entry = {}));
    let stmt = entry[shape];
    if (stmt === undefined) {
      if (sql.pgOnly) throw new InvariantError(`a PostgreSQL statement run on SQLite: ${sql.sqlite}`);
      stmt = this.db.prepare(sql.sqlite);
      if (shape === 'arrays') stmt.raw(true);
      if (shape === 'first') stmt.pluck(true);
      entry[shape] = stmt;
    }
    return stmt;
  }

  private call<T>(fn: () => T): Promise<T> {
    return this.gate === null ? settled(fn) : this.gate.run(fn);
  }

  all<R>(sql: Sql, params?: Params): Promise<R[]> {
    return this.call(() => this.statement(sql, 'rows').all(...bind(params)) as R[]);
  }

  raw<R extends unknown[]>(sql: Sql, params?: Params): Promise<R[]> {
    return this.call(() => this.statement(sql, 'arrays').all(...bind(params)) as R[]);
  }

  get<R>(sql: Sql, params?: Params): Promise<R | undefined> {
    return this.call(() => this.statement(sql, 'rows').get(...bind(params)) as R | undefined);
  }

  value<V>(sql: Sql, params?: Params): Promise<V | undefined> {
    return this.call(() => this.statement(sql, 'first').get(...bind(params)) as V | undefined);
  }

  column<V>(sql: Sql, params?: Params): Promise<V[]> {
    return this.call(() => this.statement(sql, 'first').all(...bind(params)) as V[]);
  }

  run(sql: Sql, params?: Params): Promise<number> {
    return this.call(() => this.statement(sql, 'rows').run(...bind(params)).changes);
  }

  /**
   * Run `fn` in one transaction: `BEGIN IMMEDIATE` for writers (SQLite's write lock, taken
   * first, is the writer lock), a deferred `BEGIN` for reads. The gate keeps every other
   * caller's statement out of it while it spans awaits.
   */
  tx<T>(fn: (conn: Conn) => Promise<T>, mode: TxMode = 'write'): Promise<T> {
    if (this.inTransaction) return fn(this);
    const run = async (): Promise<T> => {
      this.db.exec(mode === 'read' ? 'BEGIN' : 'BEGIN IMMEDIATE');
      try {
        const out = await fn(this.inside());
        this.db.exec('COMMIT');
        return out;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    };
    return this.gate === null ? run() : this.gate.exclusive(run);
  }
}
