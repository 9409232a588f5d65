/**
 * The store on PostgreSQL (node-postgres, one pool). The same `Store` interface as the SQLite
 * one (`../index.ts`), with the same guarantees by PostgreSQL's means:
 *
 * - `mutate` runs in one transaction that first takes the store's writer lock (an advisory
 *   lock, `conn.ts`), so admin changes run one at a time as under SQLite's `BEGIN IMMEDIATE`,
 *   across every process on the database; the state version is bumped with `UPDATE … RETURNING`
 *   on its row, which stays locked until the commit: versions are gapless. A transaction
 *   holding that lock may sit idle `WRITER_IDLE_MS` (`conn.ts`), any other
 *   `IDLE_IN_TRANSACTION_MS`, before the server ends its session.
 * - `read` and the full snapshot reader each hold one `REPEATABLE READ` transaction: every
 *   statement sees the state of one instant.
 * - Every version bump is announced with `NOTIFY svc_state_version, '<version>'` in the
 *   transaction that bumps it (so it is delivered at the commit, and only then). Each store
 *   `LISTEN`s on one dedicated connection and tells its `onVersion` listeners about versions
 *   other processes on the database committed: every control's hub hears every change. Its own
 *   bumps and the announced ones are deduplicated, and listeners only ever hear a version above
 *   the last they heard. A listening connection that drops is opened again, and then listeners
 *   hear the database's current version, so a change committed while nobody listened is not
 *   missed (`version-listener.ts`).
 * - Ingest is idempotent by call id (`ON CONFLICT DO NOTHING`), settlement commits each group
 *   of batches in one transaction under the writer lock, receipts chain with a unique batch
 *   number, and the ledger invariant is checked inside the transaction that moves money.
 *
 * The data dir still holds what is not the database's: the receipt signing key and the
 * receipts backfill record.
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import type { Audit, MutationContext } from '../changes';
import type { SnapshotReads } from '../snapshot-reads';
import { StoreBase, type Store, type StoreDescription, type StoreOptions, type StoreTables } from '../store';
import { maskDatabaseUrl } from '../../../protocol/database-url';
import { PgClient } from './client';
import { PgClusterTable } from './cluster-table';
import { PgConn, WRITER_IDLE_MS, sql } from './conn';
import { migratePg, pgSchemaVersion } from './migrate';
import { PG_MIGRATIONS } from './migrations';
import { PG_TYPES } from './types';
import { pgReadSession } from './read-session';
import { SqlSnapshotReads } from '../sql/snapshot-reads';
import { ID_SECRET } from '../sql/public-reads';
import { commitMutation } from '../sql/state';
import { VERSION_CHANNEL, VersionListener } from './version-listener';
import { openShared, pgTables, type PgShared } from './tables';
import { READER_SETTINGS } from '../sql/settlement';
import { unreachable } from './unreachable';

export interface PgStoreOptions extends StoreOptions {
  /** The data dir: where the receipt signing key and the backfill record live. */
  dataDir: string;
  /** Most connections the pool opens. @default 10 */
  poolSize?: number;
  /** First wait before the listening connection is opened again after it dropped. @default LISTEN_RETRY_MS (version-listener.ts) */
  listenRetryMs?: number;
  /** How long the server lets a transaction of this store sit idle. @default IDLE_IN_TRANSACTION_MS */
  idleInTransactionMs?: number;
  /** How long it lets one holding the writer lock sit idle. @default the lesser of WRITER_IDLE_MS (conn.ts) and idleInTransactionMs */
  writerIdleMs?: number;
}

/** Connections the pool opens at most. @default 10 */
export const DEFAULT_POOL_SIZE = 10;

/**
 * The server ends a session of this store whose transaction has sat idle this long. No
 * transaction of the store waits on anything but its own statements and a few milliseconds of
 * planning or hashing between them, so only a control that stopped running mid-transaction
 * (frozen, paused, its host cut off with the connection still open) gets there, and it would
 * otherwise hold what its transaction locked until TCP gave up on the connection (hours, by
 * default). A transaction holding the writer lock, which every other control's changes and
 * settlement wait for, gets a much shorter limit: `WRITER_IDLE_MS` (`conn.ts`).
 */
export const IDLE_IN_TRANSACTION_MS = 30_000;

const Q = {
  announce: sql(`SELECT pg_notify('${VERSION_CHANNEL}', ?)`),
};

export class PgStore extends StoreBase implements Store {
  readonly url: string;
  readonly idSecret: Buffer;
  readonly receiptsEnabled: boolean;
  private readonly pool: Pool;
  private readonly conn: PgConn;
  private readonly shared: PgShared;
  /** The highest version the listeners heard (or that the store found when it opened). */
  private heard = 0;
  /** Hears the versions other processes on the database commit. */
  private readonly versions: VersionListener;
  private closed = false;

  readonly cluster: PgClusterTable;

  private constructor(url: string, pool: Pool, conn: PgConn, shared: PgShared, idSecret: Buffer, listenRetryMs: number | undefined) {
    super(pgTables(conn, shared));
    this.url = url;
    this.pool = pool;
    this.conn = conn;
    this.shared = shared;
    this.idSecret = idSecret;
    this.receiptsEnabled = shared.receipts.enabled;
    this.cluster = new PgClusterTable(this.conn);
    this.versions = new VersionListener({
      url,
      current: () => this.version(),
      heard: (version) => this.hear(version),
      heardGateways: (event) => this.cluster.heardGateways(event),
      ...(listenRetryMs === undefined ? {} : { retryMs: listenRetryMs }),
    });
  }

  /**
   * Connect to `url`, migrate the database (under the migration lock: any number of processes
   * may open it at once), and get it ready: the public id secret, the receipt signing key of
   * the data dir, and, on the first open that signs receipts, the receipts of batches settled
   * before (once, as on SQLite).
   */
  static async open(url: string, options: PgStoreOptions): Promise<PgStore> {
    const idleMs = options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS;
    const settings = {
      Client: PgClient,
      connectionString: url,
      types: PG_TYPES,
      application_name: 'svc-control',
      options: `-c idle_in_transaction_session_timeout=${idleMs}`,
    };
    const pool = new Pool({ ...settings, max: options.poolSize ?? DEFAULT_POOL_SIZE });
    // The settler's reader (`PgShared.settlementReader`): connects on the settler's first batch.
    const readerPool = new Pool({
      ...settings,
      application_name: 'svc-control-settler',
      options: `${settings.options} ${READER_SETTINGS}`,
      max: 1,
    });
    // An idle connection the server closed is dropped by the pool; the next query opens another.
    pool.on('error', () => undefined);
    readerPool.on('error', () => undefined);
    let shared: PgShared | undefined;
    let store: PgStore | undefined;
    try {
      await migratePg(pool);
      const conn = new PgConn(pool, null, null, options.writerIdleMs ?? Math.min(WRITER_IDLE_MS, idleMs));
      await conn.run(ID_SECRET.create, [randomBytes(32)]);
      const idSecret = (await conn.value<Buffer>(ID_SECRET.read))!;
      shared = openShared({ ...options, idSecret, readerPool });
      store = new PgStore(url, pool, conn, shared, idSecret, options.listenRetryMs);
      await store.receipts.open(Date.now());
      await store.versions.open();
      return store;
    } catch (err) {
      if (store !== undefined) await store.close();
      else {
        if (shared === undefined) await readerPool.end();
        else await shared.close();
        await pool.end();
      }
      throw err;
    }
  }

  /** The listening connection's server process id, or null while it is being opened again. */
  get listenerPid(): number | null {
    return this.versions.pid;
  }

  /** Tell the listeners about `version` unless they heard it or a later one. */
  private hear(version: number): void {
    if (version <= this.heard) return;
    this.heard = version;
    this.announce(version);
  }

  /** Every table family on `conn` (the pool, or one transaction's connection). */
  private tables(conn: PgConn): StoreTables {
    return pgTables(conn, this.shared);
  }

  async mutate<T>(ctx: MutationContext, audit: Audit, fn: (tx: StoreTables) => T | Promise<T>): Promise<{ result: T; version: number }> {
    const out = await this.conn.tx(async (conn) => {
      const tx = this.tables(conn);
      const result = await fn(tx);
      const committed = await commitMutation(conn, tx.audit, ctx, audit);
      if (committed.bumped) await conn.run(Q.announce, [String(committed.version)]);
      return { result, ...committed };
    }, 'serial');
    if (out.bumped) this.hear(out.version);
    return { result: out.result, version: out.version };
  }

  read<T>(fn: (tx: StoreTables) => Promise<T>): Promise<T> {
    return this.conn.tx((conn) => fn(this.tables(conn)), 'read');
  }

  openSnapshotReader(): SnapshotReads {
    return new SqlSnapshotReads(pgReadSession(this.pool));
  }

  async schemaVersion(): Promise<number> {
    try {
      return await pgSchemaVersion(this.pool);
    } catch (err) {
      throw unreachable(err, this.pool);
    }
  }

  async describe(): Promise<StoreDescription> {
    return {
      kind: 'postgres',
      url: maskDatabaseUrl(this.url),
      schema_version: await this.schemaVersion(),
      schema_expected: PG_MIGRATIONS.length,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.versions.close();
    await this.shared.close();
    await this.pool.end();
  }
}
