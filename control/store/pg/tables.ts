/**
 * The PostgreSQL store's table families, wired as `../index.ts` wires SQLite's: one module per
 * family, each class taking the `PgConn` it runs on (the pool, or one transaction's
 * connection). What must outlive one connection (the receipt signer and hasher) is opened once
 * per store (`openShared`) and handed to every family built on it.
 */
import type { StoreTables } from '../store';
import type { ReceiptsCore, ReceiptsFactory } from '../receipts';
import { SqlReceiptsTable } from '../sql/receipts';
import { PgConn } from './conn';
import type { Pool } from 'pg';
import { sharedTables } from '../sql';
import { SqlLedgerTable } from '../sql/ledger';
import { PgSettlementGroups } from './settlement-group';
import { SqlSettlementTable } from '../sql/settlement';
import { KeyAccounts } from '../sql/keys';

/** What every family on one store shares, whatever connection it runs on. */
export interface PgShared {
  readonly receipts: ReceiptsCore;
  /**
   * The settler's second connection, a pool of one of its own: it reads the next batch while the
   * settling transaction writes the one before (`settlement-group.ts`). Of its own, so that reading
   * never waits for a connection held by someone who waits for the settling transaction's lock.
   */
  readonly settlementReader: PgConn;
  /** Each key's account, as the settler posts to it: one map for the store (`sql/keys.ts`). */
  readonly keyAccounts: KeyAccounts;
  close(): Promise<void>;
}

export interface SharedOptions {
  dataDir: string;
  /** The pool of `PgShared.settlementReader`; closed with the rest. */
  readerPool: Pool;
  receipts?: boolean;
  receiptsCore: ReceiptsFactory;
  idSecret: Buffer;
}

/** Open what the families share: the data dir's receipt signing key and the hasher. */
export function openShared(options: SharedOptions): PgShared {
  // Trees are hashed on the calling thread. On SQLite a worker thread hashes while this
  // thread runs the batch's statements; here the server runs them, every tree is waited
  // for as soon as it is started, and a worker would only add the copies to it and back.
  const receipts = options.receiptsCore({
    dataDir: options.dataDir,
    idSecret: options.idSecret,
    enabled: options.receipts ?? true,
    hashInline: true,
  });
  return {
    receipts,
    settlementReader: new PgConn(options.readerPool),
    keyAccounts: new KeyAccounts(),
    close: async () => {
      receipts.close();
      await options.readerPool.end();
    },
  };
}

/** The table families, as `StoreTables` has them, on `conn`. */
export function pgTables(conn: PgConn, shared: PgShared): StoreTables {
  const receipts = new SqlReceiptsTable(conn, shared.receipts);
  return {
    ...sharedTables(conn),
    ledger: new SqlLedgerTable(conn),
    settlement: new SqlSettlementTable(
      conn,
      (c) => receipts.on(c),
      new PgSettlementGroups(conn, receipts, shared.settlementReader, shared.keyAccounts),
      shared.keyAccounts,
    ),
    receipts,
  };
}
