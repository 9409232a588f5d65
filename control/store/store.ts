/**
 * The store's contract, as every caller sees it whichever database is under it: `Store` (each
 * table family's methods answer promises; every mutation goes through `mutate()`, which runs it
 * in one transaction with its audit row and, when it changes what gateways enforce, the state
 * version bump), `StoreTables`, and `StoreBase`, what both stores are besides their database.
 * Neither store is loaded from here (types only), so its driver stays unloaded.
 */
import type { StoreStatus } from '../../protocol/admin';
import type { Audit, MutationContext } from './changes';
import type { ClusterTable } from './cluster';
import type { LedgerTable } from './ledger';
import type { ReceiptsFactory, ReceiptsTable } from './receipts';
import type { SettlementTable } from './settlement';
import type { SnapshotReads } from './snapshot-reads';
import type { SharedTables } from './sql';

export interface StoreOptions {
  /**
   * Sign a receipt for every settlement batch (default). `false` only for the settlement
   * bench's side-by-side baseline: a later open with receipts on signs the batches left
   * without one, in batch order, before anything else, if no receipts backfill is recorded
   * yet (else they halt the settler).
   */
  receipts?: boolean;
  /**
   * Makes the receipts' signer, hasher and provider ids once the store has read its id secret:
   * `makeReceipts` (`control/receipts/maker.ts`). The store holds none of them itself.
   */
  receiptsCore: ReceiptsFactory;
}

/** What a store holds, as callers inside and outside a transaction see it. */
export interface StoreTables extends SharedTables {
  /** The double-entry ledger: transfers, balances, pool, payouts, indexer totals. */
  readonly ledger: LedgerTable;
  /** Settlement batches (the settler's one-transaction commits). */
  readonly settlement: SettlementTable;
  /** Signed, chained settlement receipts and their public keys (written with each batch). */
  readonly receipts: ReceiptsTable;
}

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

/**
 * What both stores are besides their database: their families as their own members (the
 * tables outside a transaction, taken once when the store is built) and the listeners of
 * committed version bumps.
 */
export abstract class StoreBase {
  declare readonly keys: StoreTables['keys'];
  declare readonly accounts: StoreTables['accounts'];
  declare readonly budgets: StoreTables['budgets'];
  declare readonly lps: StoreTables['lps'];
  declare readonly flags: StoreTables['flags'];
  declare readonly endpoints: StoreTables['endpoints'];
  declare readonly changelog: StoreTables['changelog'];
  declare readonly audit: StoreTables['audit'];
  declare readonly operators: StoreTables['operators'];
  declare readonly approvals: StoreTables['approvals'];
  declare readonly gateways: StoreTables['gateways'];
  declare readonly outcomes: StoreTables['outcomes'];
  declare readonly rollups: StoreTables['rollups'];
  declare readonly publicReads: StoreTables['publicReads'];
  declare readonly applications: StoreTables['applications'];
  declare readonly ledger: StoreTables['ledger'];
  declare readonly settlement: StoreTables['settlement'];
  declare readonly receipts: StoreTables['receipts'];
  declare readonly liveKey: StoreTables['liveKey'];
  declare readonly version: StoreTables['version'];
  declare readonly changesSince: StoreTables['changesSince'];
  declare readonly meta: StoreTables['meta'];
  declare readonly setMeta: StoreTables['setMeta'];
  private readonly listeners = new Set<(version: number) => void>();

  protected constructor(outside: StoreTables) {
    Object.assign(this, outside);
  }

  onVersion(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tell every listener about a committed version bump. */
  protected announce(version: number): void {
    for (const listener of this.listeners) listener(version);
  }
}
