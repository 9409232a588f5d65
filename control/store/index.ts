/**
 * The control store: one SQLite file, one connection, one module per table family. Every
 * mutation goes through `mutate()`, which runs it in one IMMEDIATE transaction together with
 * its audit row and, when it changes what gateways enforce, the state version bump.
 */
import { dirname, resolve } from 'node:path';
import { openDatabase, schemaVersion, type Db } from './db';
import { ApplicationsTable } from './applications';
import { AuditTable } from './audit';
import { ChangelogTable } from './changelog';
import { EndpointsTable } from './endpoints';
import { FlagsTable } from './flags';
import { GatewaysTable } from './gateways';
import { KeysTable } from './keys';
import { LedgerTable } from './ledger';
import { OutcomesTable } from './outcomes';
import { PublicReads } from './public-reads';
import { ReceiptsTable } from './receipts';
import { RollupsTable } from './rollups';
import { SettlementTable } from './settlement';
import { SnapshotReader, liveKeyStatement } from './snapshot-reader';
import type { SnapshotKey } from '../../protocol/snapshot';
import { OpaqueIds } from '../public/ids';
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

export interface MutationContext {
  /** Name of the admin token (or process) making the change. */
  actor: string;
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

export class Store {
  readonly db: Db;
  readonly path: string;
  readonly keys: KeysTable;
  readonly flags: FlagsTable;
  readonly endpoints: EndpointsTable;
  readonly changelog: ChangelogTable;
  readonly audit: AuditTable;
  readonly gateways: GatewaysTable;
  readonly outcomes: OutcomesTable;
  /** Per-endpoint, per-minute outcome rollups (written at ingest with the outcomes). */
  readonly rollups: RollupsTable;
  /** Money totals, recent calls and the opaque-id secret for the public API and indexer. */
  readonly publicReads: PublicReads;
  readonly applications: ApplicationsTable;
  /** The double-entry ledger: transfers, balances, pool, payouts, indexer totals. */
  readonly ledger: LedgerTable;
  /** Settlement batches (the settler's one-transaction commits). */
  readonly settlement: SettlementTable;
  /** Signed, chained settlement receipts and their public keys (written with each batch). */
  readonly receipts: ReceiptsTable;
  /** The key as gateways must enforce it now, or null when it admits nothing. */
  readonly liveKey: (id: string, now: number) => SnapshotKey | null;
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
    this.keys = new KeysTable(db);
    this.flags = new FlagsTable(db);
    this.endpoints = new EndpointsTable(db);
    this.changelog = new ChangelogTable(db);
    this.audit = new AuditTable(db);
    this.gateways = new GatewaysTable(db);
    this.rollups = new RollupsTable(db);
    this.outcomes = new OutcomesTable(db, this.rollups);
    this.publicReads = new PublicReads(db);
    this.applications = new ApplicationsTable(db);
    this.ledger = new LedgerTable(db);
    // The signing key lives beside the database, in the data dir; an in-memory store gets a throwaway one.
    const inMemory = path === ':memory:' || path === '';
    const dataDir = dirname(resolve(path));
    const ids = new OpaqueIds(this.publicReads.idSecret);
    this.receipts = new ReceiptsTable(
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
    this.settlement = new SettlementTable(db, this.ledger, this.receipts);
    this.liveKey = liveKeyStatement(db);
    this.versionStmt = db.prepare(`SELECT value FROM meta WHERE name = 'state_version'`).pluck();
    this.bumpStmt = db.prepare(`UPDATE meta SET value = value + 1 WHERE name = 'state_version' RETURNING value`).pluck();
    this.changeStmt = db.prepare(`INSERT OR IGNORE INTO state_changes (version, kind, entity) VALUES (?, ?, ?)`);
    this.changesSinceStmt = db.prepare(
      `SELECT DISTINCT kind, entity FROM state_changes WHERE version > ? AND version <= ? ORDER BY kind, entity`,
    );
    this.oldestChangeStmt = db.prepare(`SELECT min(version) FROM state_changes`).pluck();
    this.metaGetStmt = db.prepare(`SELECT value FROM meta WHERE name = ?`).pluck();
    this.metaSetStmt = db.prepare(`INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`);
  }

  /**
   * Open (creating and migrating) the database at `path`, with the receipt signing key of
   * its directory (created on first open). On the first open that signs receipts, batches
   * settled before receipts get theirs here, in one transaction, before the store is used;
   * never again afterwards (`ReceiptsTable.backfillOnce`).
   */
  static open(path: string, options: StoreOptions = {}): Store {
    const db = openDatabase(path);
    let store: Store | undefined;
    try {
      store = new Store(db, path, options);
      if (store.receipts.enabled) store.receipts.backfillOnce(Date.now());
      return store;
    } catch (err) {
      store?.receipts.close();
      db.close();
      throw err;
    }
  }

  /** Version of the state gateways enforce; grows by one with every snapshot-relevant write. */
  version(): number {
    return this.versionStmt.get() as number;
  }

  schemaVersion(): number {
    return schemaVersion(this.db);
  }

  /**
   * Run `fn` and record `audit` in one transaction. Returns `fn`'s result and the state
   * version after the change. Listeners hear about version bumps after the commit.
   */
  mutate<T>(ctx: MutationContext, audit: Audit, fn: () => T): { result: T; version: number } {
    let bumped = false;
    const tx = this.db.transaction(() => {
      const result = fn();
      this.audit.record(ctx.now, ctx.actor, audit.action, audit.target ?? null, audit.detail ?? {});
      let version: number;
      if (audit.changes && audit.changes.length > 0) {
        version = this.bumpStmt.get() as number;
        for (const change of audit.changes) this.changeStmt.run(version, change.kind, change.entity);
        bumped = true;
      } else {
        version = this.version();
      }
      return { result, version };
    });
    const out = tx.immediate();
    if (bumped) for (const listener of this.listeners) listener(out.version);
    return out;
  }

  /**
   * Entities changed after version `from` up to `to`, or null when `from` is older than the
   * recorded history (the caller then sends a full snapshot).
   */
  changesSince(from: number, to: number): StateChange[] | null {
    const oldest = this.oldestChangeStmt.get() as number | null;
    if (from < 1 || from > to || (oldest !== null && from + 1 < oldest)) return null;
    return this.changesSinceStmt.all(from, to) as StateChange[];
  }

  /** Hear about every committed state version bump. Returns the unsubscribe function. */
  onVersion(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An integer kept in the `meta` table (inside `mutate` when it must be audited). */
  meta(name: string): number | null {
    return (this.metaGetStmt.get(name) as number | undefined) ?? null;
  }

  setMeta(name: string, value: number): void {
    this.metaSetStmt.run(name, value);
  }

  /** A read-only connection holding one consistent view, for streaming a full snapshot. */
  openSnapshotReader(): SnapshotReader {
    return new SnapshotReader(this.path);
  }

  pragma(name: string): unknown {
    return this.db.pragma(name, { simple: true });
  }

  close(): void {
    this.receipts.close();
    if (this.db.open) this.db.close();
  }
}
