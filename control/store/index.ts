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
import { AuditTable } from './audit';
import { ChangelogTable } from './changelog';
import { EndpointsTable } from './endpoints';
import { KeysTable } from './keys';
import { LedgerTable } from './ledger';
import { OutcomesTable } from './outcomes';
import { PublicReads } from './public-reads';
import { ReceiptsTable } from './receipts';
import { RollupsTable } from './rollups';
import { SettlementTable } from './settlement';
import { SnapshotReader, liveKeyStatement } from './snapshot-reader';
import { Gate, asyncTable, settled, type Async } from './seam';
import { SqliteConn } from './sqlite-conn';
import { sharedTables, type SharedTables } from './sql';
import type { ClusterTable } from './cluster';
import type { StoreStatus } from '../../protocol/admin';
import type { SnapshotKey } from '../../protocol/snapshot';
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

/** Who makes a change, as the audit log records it. */
export interface Actor {
  /** The operator's name (`root` for the bootstrap admin token), or the process's (`control`). */
  actor: string;
  /** The id of the token the operator presented (`opt_…`, `root`, `root-env`); absent or null for control's own changes. */
  tokenId?: string | null;
  /** The second operator who approved a two-person action. */
  approvedBy?: string | null;
}

export interface MutationContext extends Actor {
  /** Clock reading for this mutation, in ms. */
  now: number;
}

export interface Audit {
  action: string;
  target?: string | null;
  detail?: Record<string, unknown>;
  /** What gateways must see change: each entry bumps the state version once, together. */
  changes?: StateChange[];
}

export type StateChangeKind = 'key' | 'endpoint' | 'flags' | 'limits';
export interface StateChange {
  kind: StateChangeKind;
  /** Key id, endpoint id, or '*' for flags and limits. */
  entity: string;
}

/** The table families, as SQLite implements them (synchronously, one connection). */
interface SqliteTables {
  keys: KeysTable;
  endpoints: EndpointsTable;
  changelog: ChangelogTable;
  audit: AuditTable;
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
export interface StoreTables extends AsyncTables, SharedTables {
  /** The key as gateways must enforce it now, or null when it admits nothing. */
  readonly liveKey: (id: string, now: number) => Promise<SnapshotKey | null>;
  /** Version of the state gateways enforce; grows by one with every snapshot-relevant write. */
  readonly version: () => Promise<number>;
  /**
   * Entities changed after version `from` up to `to`, or null when `from` is older than the
   * recorded history (the caller then sends a full snapshot).
   */
  readonly changesSince: (from: number, to: number) => Promise<StateChange[] | null>;
  /** An integer kept in the `meta` table (inside `mutate` when it must be audited). */
  readonly meta: (name: string) => Promise<number | null>;
  readonly setMeta: (name: string, value: number) => Promise<void>;
}

/** A full snapshot's reads, on their own connection, at exactly one state version. */
export type SnapshotReads = Async<SnapshotReader>;

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
  /** What `mutate` and `read` hand their `fn`: the same tables, not held by the gate. */
  private readonly tx: StoreTables;
  private readonly liveKeySync: (id: string, now: number) => SnapshotKey | null;
  private readonly versionStmt;
  private readonly bumpStmt;
  private readonly changeStmt;
  private readonly changesSinceStmt;
  private readonly oldestChangeStmt;
  private readonly metaGetStmt;
  private readonly metaSetStmt;
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
      keys: new KeysTable(db),
      endpoints: new EndpointsTable(db),
      changelog: new ChangelogTable(db),
      audit: new AuditTable(db),
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
    this.liveKeySync = liveKeyStatement(db);
    this.versionStmt = db.prepare(`SELECT value FROM meta WHERE name = 'state_version'`).pluck();
    this.bumpStmt = db.prepare(`UPDATE meta SET value = value + 1 WHERE name = 'state_version' RETURNING value`).pluck();
    this.changeStmt = db.prepare(`INSERT OR IGNORE INTO state_changes (version, kind, entity) VALUES (?, ?, ?)`);
    this.changesSinceStmt = db.prepare(
      `SELECT DISTINCT kind, entity FROM state_changes WHERE version > ? AND version <= ? ORDER BY kind, entity`,
    );
    this.oldestChangeStmt = db.prepare(`SELECT min(version) FROM state_changes`).pluck();
    this.metaGetStmt = db.prepare(`SELECT value FROM meta WHERE name = ?`).pluck();
    this.metaSetStmt = db.prepare(`INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`);

    const conn = new SqliteConn(db, this.gate);
    const view = (gate: Gate | null): StoreTables => {
      const run = <T>(fn: () => T): Promise<T> => (gate ? gate.run(fn) : settled(fn));
      return {
        keys: asyncTable(tables.keys, gate),
        ...sharedTables(gate === null ? conn.inside() : conn),
        endpoints: asyncTable(tables.endpoints, gate),
        changelog: asyncTable(tables.changelog, gate),
        audit: asyncTable(tables.audit, gate),
        outcomes: asyncTable(tables.outcomes, gate),
        rollups: asyncTable(tables.rollups, gate),
        publicReads: asyncTable(tables.publicReads, gate),
        ledger: asyncTable(tables.ledger, gate),
        settlement: asyncTable(tables.settlement, gate),
        receipts: asyncTable(tables.receipts, gate),
        liveKey: (id, now) => run(() => this.liveKeySync(id, now)),
        version: () => run(() => this.versionNow()),
        changesSince: (from, to) => run(() => this.changesSinceNow(from, to)),
        meta: (name) => run(() => this.metaNow(name)),
        setMeta: (name, value) => run(() => void this.metaSetStmt.run(name, value)),
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

  private versionNow(): number {
    return this.versionStmt.get() as number;
  }

  private metaNow(name: string): number | null {
    return (this.metaGetStmt.get(name) as number | undefined) ?? null;
  }

  private changesSinceNow(from: number, to: number): StateChange[] | null {
    const oldest = this.oldestChangeStmt.get() as number | null;
    if (from < 1 || from > to || (oldest !== null && from + 1 < oldest)) return null;
    return this.changesSinceStmt.all(from, to) as StateChange[];
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

  /** A transaction that spans awaits: the gate keeps every other caller's statement out of it. */
  private transaction<T>(begin: 'BEGIN IMMEDIATE' | 'BEGIN', fn: () => Promise<T>): Promise<T> {
    return this.gate.exclusive(async () => {
      this.db.exec(begin);
      try {
        const out = await fn();
        this.db.exec('COMMIT');
        return out;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  async mutate<T>(ctx: MutationContext, audit: Audit, fn: (tx: StoreTables) => T | Promise<T>): Promise<{ result: T; version: number }> {
    let bumped = false;
    const out = await this.transaction('BEGIN IMMEDIATE', async () => {
      const result = await fn(this.tx);
      this.sync.audit.record(ctx.now, ctx.actor, audit.action, audit.target ?? null, audit.detail ?? {}, ctx);
      let version: number;
      if (audit.changes && audit.changes.length > 0) {
        version = this.bumpStmt.get() as number;
        for (const change of audit.changes) this.changeStmt.run(version, change.kind, change.entity);
        bumped = true;
      } else {
        version = this.versionNow();
      }
      return { result, version };
    });
    if (bumped) for (const listener of this.listeners) listener(out.version);
    return out;
  }

  read<T>(fn: (tx: StoreTables) => Promise<T>): Promise<T> {
    return this.transaction('BEGIN', () => fn(this.tx));
  }

  onVersion(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  openSnapshotReader(): SnapshotReads {
    return asyncTable(new SnapshotReader(this.path), null);
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
