/**
 * The control store. `Store` is the interface every caller uses: each table family's methods
 * answer promises (seam.ts), and every mutation goes through `mutate()`, which runs it in one
 * transaction together with its audit row and, when it changes what gateways enforce, the state
 * version bump. `SqliteStore` implements it on one SQLite file and one connection (one module
 * per table family, synchronous inside).
 */
import { dirname, resolve } from 'node:path';
import { openDatabase, schemaVersion, type Db } from './db';
import { MIGRATIONS } from './migrations';
import { LedgerTable } from './ledger';
import { OutcomesTable } from './outcomes';
import { PublicReads } from './public-reads';
import { ReceiptsTable } from './receipts';
import { RollupsTable } from './rollups';
import { SettlementTable } from './settlement';
import Database from 'better-sqlite3';
import type { SnapshotReads } from './snapshot-reads';
import { SqlSnapshotReads } from './sql/snapshot-reads';
import { commitMutation } from './sql/state';
import type { Audit, MutationContext } from './changes';
import { Gate, asyncTable, settled, type Async } from './seam';
import { SqliteConn } from './sqlite-conn';
import { sharedTables, type SharedTables } from './sql';
import type { ClusterTable } from './cluster';
import type { StoreStatus } from '../../protocol/admin';
import { OpaqueIds } from '../ids';
import { backfillMarker } from '../receipts/backfill-marker';
import { ReceiptSigner, loadOrCreateSigner, rotateSigner } from '../receipts/signing-key';

export interface StoreOptions {
  /**
   * Sign a receipt for every settlement batch (default). `false` only for the settlement
   * bench's side-by-side baseline: a later open with receipts on signs the batches left
   * without one, in batch order, before anything else, if no receipts backfill is recorded
   * yet (else they halt the settler).
   */
  receipts?: boolean;
}

export type { Actor, Audit, MutationContext, StateChange, StateChangeKind } from './changes';

/** The table families, as SQLite implements them (synchronously, one connection). */
interface SqliteTables {
  outcomes: OutcomesTable;
  /** Per-endpoint, per-minute outcome rollups (written at ingest with the outcomes). */
  rollups: RollupsTable;
  /** Money totals and recent calls for the public API and indexer. */
  publicReads: PublicReads;
  /** The double-entry ledger: transfers, balances, pool, payouts, indexer totals. */
  ledger: LedgerTable;
  /** Settlement batches (the settler's one-transaction commits). */
  settlement: SettlementTable;
  /** Signed, chained settlement receipts and their public keys (written with each batch). */
  receipts: ReceiptsTable;
}

/** Each table family's methods, answering promises. */
type AsyncTables = { readonly [K in keyof SqliteTables]: Async<SqliteTables[K]> };

/** What a store holds, as callers inside and outside a transaction see it. */
export interface StoreTables extends AsyncTables, SharedTables {}

export type { SnapshotReads } from './snapshot-reads';

/**
 * Which database a store runs on, as `/_admin/v1/status` shows it (`store`): its kind, where it
 * is, the schema version it is at and the one this build migrates it to.
 */
export type StoreDescription = StoreStatus;

export interface Store extends StoreTables {
  /**
   * The controls sharing the database and the settler's lease: PostgreSQL only; null on SQLite,
   * whose one control per data dir is always the settler's.
   */
  readonly cluster: ClusterTable | null;
  /**
   * The per-database secret behind the public API's opaque ids and the indexer's sealed
   * cursors (stable across restarts, never shown).
   */
  readonly idSecret: Buffer;
  /** Whether settlement batches get signed receipts (off only in the settlement bench's baseline). */
  readonly receiptsEnabled: boolean;
  /**
   * Run `fn` and record `audit` in one transaction. Returns `fn`'s result and the state
   * version after the change. `fn` must use the `tx` it is given, never the store itself.
   * Listeners hear about version bumps after the commit.
   */
  mutate<T>(ctx: MutationContext, audit: Audit, fn: (tx: StoreTables) => T | Promise<T>): Promise<{ result: T; version: number }>;
  /** Run `fn`'s reads in one transaction, so they see one state (`fn` must use `tx`). */
  read<T>(fn: (tx: StoreTables) => Promise<T>): Promise<T>;
  /** Hear about every committed state version bump. Returns the unsubscribe function. */
  onVersion(listener: (version: number) => void): () => void;
  /** A separate read-only connection holding one consistent view, for streaming a full snapshot. */
  openSnapshotReader(): SnapshotReads;
  schemaVersion(): Promise<number>;
  describe(): Promise<StoreDescription>;
  close(): Promise<void>;
}

export type { AuditBy } from './audit';
export type { ClusterTable, ControlRow, GatewaysEvent, StoredToken } from './cluster';

/** The store on one SQLite file: better-sqlite3, synchronous inside, behind the async seam. */
export class SqliteStore implements Store {
  readonly db: Db;
  readonly path: string;
  readonly idSecret: Buffer;
  readonly receiptsEnabled: boolean;
  readonly keys;
  readonly flags;
  readonly endpoints;
  readonly changelog;
  readonly audit;
  readonly operators;
  readonly approvals;
  readonly gateways;
  readonly outcomes;
  readonly rollups;
  readonly publicReads;
  readonly applications;
  readonly ledger;
  readonly settlement;
  readonly receipts;
  readonly cluster = null;
  /** The synchronous tables, for the SQLite-only tools (benches, `ledger verify` on a file). */
  readonly sync: Readonly<SqliteTables>;
  private readonly gate = new Gate();
  private readonly conn: SqliteConn;
  /** What `mutate` and `read` hand their `fn`: the same tables, not held by the gate. */
  private readonly tx: StoreTables;
  private readonly listeners = new Set<(version: number) => void>();

  private constructor(db: Db, path: string, options: StoreOptions) {
    this.db = db;
    this.path = path;
    const rollups = new RollupsTable(db);
    const publicReads = new PublicReads(db);
    const ledger = new LedgerTable(db);
    // The signing key lives beside the database, in the data dir; an in-memory store gets a throwaway one.
    const inMemory = path === ':memory:' || path === '';
    const dataDir = dirname(resolve(path));
    const ids = new OpaqueIds(publicReads.idSecret);
    const receipts = new ReceiptsTable(
      db,
      {
        signer: inMemory ? ReceiptSigner.generate() : loadOrCreateSigner(dataDir).signer,
        providerId: (endpointId) => ids.provider(endpointId),
        rotateKey: () => (inMemory ? ReceiptSigner.generate() : rotateSigner(dataDir)),
        enabled: options.receipts ?? true,
        backfillMarker: inMemory ? null : backfillMarker(dataDir),
      },
      Date.now(),
    );
    const tables: SqliteTables = {
      outcomes: new OutcomesTable(db, rollups),
      rollups,
      publicReads,
      ledger,
      settlement: new SettlementTable(db, ledger, receipts),
      receipts,
    };
    this.sync = tables;
    this.idSecret = publicReads.idSecret;
    this.receiptsEnabled = receipts.enabled;
    const conn = new SqliteConn(db, this.gate);
    this.conn = conn;
    const view = (gate: Gate | null): StoreTables => {
      return {
        ...sharedTables(gate === null ? conn.inside() : conn),
        outcomes: asyncTable(tables.outcomes, gate),
        rollups: asyncTable(tables.rollups, gate),
        publicReads: asyncTable(tables.publicReads, gate),
        ledger: asyncTable(tables.ledger, gate),
        settlement: asyncTable(tables.settlement, gate),
        receipts: asyncTable(tables.receipts, gate),
      };
    };
    const outside = view(this.gate);
    this.tx = view(null);
    this.keys = outside.keys;
    this.flags = outside.flags;
    this.endpoints = outside.endpoints;
    this.changelog = outside.changelog;
    this.audit = outside.audit;
    this.operators = outside.operators;
    this.approvals = outside.approvals;
    this.gateways = outside.gateways;
    this.outcomes = outside.outcomes;
    this.rollups = outside.rollups;
    this.publicReads = outside.publicReads;
    this.applications = outside.applications;
    this.ledger = outside.ledger;
    this.settlement = outside.settlement;
    this.receipts = outside.receipts;
    this.liveKey = outside.liveKey;
    this.version = outside.version;
    this.changesSince = outside.changesSince;
    this.meta = outside.meta;
    this.setMeta = outside.setMeta;
  }

  readonly liveKey: StoreTables['liveKey'];
  readonly version: StoreTables['version'];
  readonly changesSince: StoreTables['changesSince'];
  readonly meta: StoreTables['meta'];
  readonly setMeta: StoreTables['setMeta'];

  /**
   * Open (creating and migrating) the database at `path`, with the receipt signing key of
   * its directory (created on first open). On the first open that signs receipts, batches
   * settled before receipts get theirs here, in one transaction, before the store is used;
   * never again afterwards (`ReceiptsTable.backfillOnce`).
   */
  static open(path: string, options: StoreOptions = {}): SqliteStore {
    const db = openDatabase(path);
    let store: SqliteStore | undefined;
    try {
      store = new SqliteStore(db, path, options);
      if (store.receiptsEnabled) store.sync.receipts.backfillOnce(Date.now());
      return store;
    } catch (err) {
      store?.sync.receipts.close();
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
    if (out.bumped) for (const listener of this.listeners) listener(out.version);
    return { result: out.result, version: out.version };
  }

  read<T>(fn: (tx: StoreTables) => Promise<T>): Promise<T> {
    return this.conn.tx(() => fn(this.tx), 'read');
  }

  onVersion(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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
      this.sync.receipts.close();
      if (this.db.open) this.db.close();
    });
  }
}

/** Open the store at `path` (see `SqliteStore.open`). */
export const Store = {
  open: (path: string, options: StoreOptions = {}): Promise<Store> => settled(() => SqliteStore.open(path, options)),
};
