/**
 * The store on SQLite: `SqliteStore` implements the contract (`store.ts`) on one file and one
 * better-sqlite3 connection, the families written once on its `SqliteConn` (`sql/`), the
 * others as the SQLite classes of their modules, behind the async seam (`seam.ts`).
 */
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { openDatabase, schemaVersion, type Db } from './db';
import { MIGRATIONS } from './migrations';
import { SqlLedgerTable } from './sql/ledger';
import { SqlSettlementTable } from './sql/settlement';
import { KeyAccounts } from './sql/keys';
import Database from 'better-sqlite3';
import { SqlSnapshotReads } from './sql/snapshot-reads';
import { commitMutation } from './sql/state';
import type { Audit, MutationContext } from './changes';
import { Gate, settled } from './seam';
import { SqliteConn } from './sqlite-conn';
import { sharedTables } from './sql';
import { ID_SECRET } from './sql/public-reads';
import type { SnapshotReads } from './snapshot-reads';
import { StoreBase, type Store as StoreContract, type StoreDescription, type StoreOptions, type StoreTables } from './store';
import { SqlReceiptsTable } from './sql/receipts';

export type { StoreOptions, StoreTables, StoreDescription } from './store';
export type { Actor, Audit, MutationContext, StateChange, StateChangeKind } from './changes';
export type { SnapshotReads } from './snapshot-reads';

/** The store every caller uses (`store.ts`); `Store.open` opens it on SQLite. */
export type Store = StoreContract;

export type { AuditBy } from './audit';
export type { ClusterTable, ControlRow, GatewaysEvent, StoredToken } from './cluster';

/** The store on one SQLite file: better-sqlite3, synchronous inside, behind the async seam. */
export class SqliteStore extends StoreBase implements Store {
  readonly db: Db;
  readonly path: string;
  readonly idSecret: Buffer;
  readonly receiptsEnabled: boolean;
  readonly cluster = null;
  private readonly gate: Gate;
  private readonly conn: SqliteConn;
  /** What `mutate` and `read` hand their `fn`: the same tables, not held by the gate. */
  private readonly tx: StoreTables;
  private constructor(db: Db, path: string, options: StoreOptions) {
    // The signing key lives beside the database, in the data dir; an in-memory store gets a throwaway one.
    const inMemory = path === ':memory:' || path === '';
    db.prepare(ID_SECRET.create.sqlite).run(randomBytes(32));
    const idSecret = db.prepare(ID_SECRET.read.sqlite).pluck().get() as Buffer;
    const receipts = options.receiptsCore({
      dataDir: inMemory ? null : dirname(resolve(path)),
      idSecret,
      enabled: options.receipts ?? true,
      hashInline: false,
    });
    const gate = new Gate();
    const conn = new SqliteConn(db, gate);
    const keyAccounts = new KeyAccounts();
    const view = (gate: Gate | null): StoreTables => {
      const c = gate === null ? conn.inside() : conn;
      const receiptsOn = new SqlReceiptsTable(c, receipts);
      return {
        ...sharedTables(c),
        ledger: new SqlLedgerTable(c),
        settlement: new SqlSettlementTable(c, (tx) => receiptsOn.on(tx), null, keyAccounts),
        receipts: receiptsOn,
      };
    };
    super(view(gate));
    this.db = db;
    this.path = path;
    this.idSecret = idSecret;
    this.receiptsEnabled = receipts.enabled;
    this.gate = gate;
    this.conn = conn;
    this.tx = view(null);
  }

  /**
   * Open (creating and migrating) the database at `path`, with the receipt signing key of
   * its directory (created on first open). On the first open that signs receipts, batches
   * settled before receipts get theirs here, in one transaction, before the store is used;
   * never again afterwards (`ReceiptsTable.open`).
   */
  static async open(path: string, options: StoreOptions): Promise<SqliteStore> {
    const db = openDatabase(path);
    let store: SqliteStore | undefined;
    try {
      store = new SqliteStore(db, path, options);
      await store.receipts.open(Date.now());
      return store;
    } catch (err) {
      store?.receipts.core.close();
      db.close();
      throw err;
    }
  }

  schemaVersion(): Promise<number> {
    return this.gate.run(() => schemaVersion(this.db));
  }

  describe(): Promise<StoreDescription> {
    return this.gate.run(() => {
      const sync = Number(this.db.pragma('synchronous', { simple: true }));
      return {
        kind: 'sqlite' as const,
        path: this.path,
        journal_mode: String(this.db.pragma('journal_mode', { simple: true })),
        synchronous: ['off', 'normal', 'full', 'extra'][sync] ?? String(sync),
        schema_version: schemaVersion(this.db),
        schema_expected: MIGRATIONS.length,
      };
    });
  }

  async mutate<T>(ctx: MutationContext, audit: Audit, fn: (tx: StoreTables) => T | Promise<T>): Promise<{ result: T; version: number }> {
    const out = await this.conn.tx(async (conn) => {
      const result = await fn(this.tx);
      return { result, ...(await commitMutation(conn, this.tx.audit, ctx, audit)) };
    });
    if (out.bumped) this.announce(out.version);
    return { result: out.result, version: out.version };
  }

  read<T>(fn: (tx: StoreTables) => Promise<T>): Promise<T> {
    return this.conn.tx(() => fn(this.tx), 'read');
  }

  /** A read-only connection of its own on the database file, opened by `begin()`. */
  openSnapshotReader(): SnapshotReads {
    let db: Db | null = null;
    return new SqlSnapshotReads({
      open: () =>
        settled(() => {
          db = new Database(this.path, { readonly: true, fileMustExist: true });
          db.exec('BEGIN');
          return new SqliteConn(db, null, true);
        }),
      close: () =>
        settled(() => {
          if (db?.inTransaction) db.exec('COMMIT');
          db?.close();
          db = null;
        }),
    });
  }

  close(): Promise<void> {
    return this.gate.run(() => {
      this.receipts.core.close();
      if (this.db.open) this.db.close();
    });
  }
}

/** Open the store at `path` (see `SqliteStore.open`). */
export const Store = {
  open: (path: string, options: StoreOptions): Promise<Store> => SqliteStore.open(path, options),
};
