/**
 * Opens control's store as the settings choose it (`databaseUrl`): SQLite at
 * `<dataDir>/control.db` when no database URL is set, PostgreSQL at the URL otherwise.
 */
import { isPostgresUrl, maskDatabaseUrl } from '../../protocol/database-url';
import { StoreOpenError } from './errors';
import type { ReceiptsFactory } from './receipts';
import type { Store, StoreOptions } from './store';

/** Opens the PostgreSQL store at `url` (the receipt signing key stays in `dataDir`). */
export type PgOpener = (url: string, opts: StoreOptions & { dataDir: string }) => Promise<Store>;

export interface OpenStoreOptions {
  /** The data dir, which holds the receipt signing key whatever the store. */
  dataDir: string;
  /** SQLite's database file, used when `databaseUrl` is null. */
  databasePath: string;
  /** `Config.databaseUrl`: null for SQLite, else a `postgres://` or `postgresql://` URL. */
  databaseUrl: string | null;
  /** Whether settlement batches get signed receipts. @default true */
  receipts?: boolean;
  /** The receipts' signer and hasher (`StoreOptions.receiptsCore`). */
  receiptsCore: ReceiptsFactory;
}

/**
 * Each store is loaded on first use, with its driver: a control on SQLite never loads
 * node-postgres or the PostgreSQL modules, and one on PostgreSQL never loads better-sqlite3
 * (test/control/store-drivers.ts).
 */
const openSqliteStore = (path: string, options: StoreOptions): Promise<Store> => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Store } = require('./index') as typeof import('./index');
  return Store.open(path, options);
};

/** The PostgreSQL store (control/store/pg/), loaded on first use. */
export const openPgStore: PgOpener = (url, opts) => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { PgStore } = require('./pg/store') as typeof import('./pg/store');
  return PgStore.open(url, opts);
};

/**
 * Open (creating and migrating) the store the settings name. A URL that is not PostgreSQL's,
 * and a PostgreSQL database that cannot be opened, throw `StoreOpenError` naming the URL only
 * with its password masked.
 */
export async function openStore(opts: OpenStoreOptions, openPostgres: PgOpener = openPgStore): Promise<Store> {
  const storeOptions: StoreOptions = {
    receiptsCore: opts.receiptsCore,
    ...(opts.receipts === undefined ? {} : { receipts: opts.receipts }),
  };
  if (opts.databaseUrl === null) return openSqliteStore(opts.databasePath, storeOptions);
  const shown = maskDatabaseUrl(opts.databaseUrl);
  if (!isPostgresUrl(opts.databaseUrl)) throw new StoreOpenError(`databaseUrl ${shown} is not a postgres:// or postgresql:// URL`);
  try {
    return await openPostgres(opts.databaseUrl, { dataDir: opts.dataDir, ...storeOptions });
  } catch (err) {
    if (err instanceof StoreOpenError) throw err;
    // node-postgres' errors name the host and port at most, never the password; the URL is shown masked.
    throw new StoreOpenError(`PostgreSQL store at ${shown}: ${(err as Error).message}`);
  }
}
