/**
 * Opens control's store as the settings choose it (`databaseUrl`): SQLite at
 * `<dataDir>/control.db` when no database URL is set, PostgreSQL at the URL otherwise.
 */
import { isPostgresUrl, maskDatabaseUrl } from '../../protocol/database-url';
import { StoreOpenError } from './db';
import { Store, type StoreOptions } from './index';

/** Opens the PostgreSQL store at `url` (the receipt signing key stays in `dataDir`). */
export type PgOpener = (url: string, opts: { dataDir: string; receipts?: boolean }) => Promise<Store>;

export interface OpenStoreOptions {
  /** The data dir, which holds the receipt signing key whatever the store. */
  dataDir: string;
  /** SQLite's database file, used when `databaseUrl` is null. */
  databasePath: string;
  /** `Config.databaseUrl`: null for SQLite, else a `postgres://` or `postgresql://` URL. */
  databaseUrl: string | null;
  /** Whether settlement batches get signed receipts. @default true */
  receipts?: boolean;
}

/**
 * Open (creating and migrating) the store the settings name. A PostgreSQL URL needs
 * `openPostgres`; without it, or for a URL that is not PostgreSQL's, this throws
 * `StoreOpenError`, naming the URL only with its password masked.
 */
export async function openStore(opts: OpenStoreOptions, openPostgres?: PgOpener): Promise<Store> {
  const storeOptions: StoreOptions = opts.receipts === undefined ? {} : { receipts: opts.receipts };
  if (opts.databaseUrl === null) return Store.open(opts.databasePath, storeOptions);
  const shown = maskDatabaseUrl(opts.databaseUrl);
  if (!isPostgresUrl(opts.databaseUrl)) throw new StoreOpenError(`databaseUrl ${shown} is not a postgres:// or postgresql:// URL`);
  if (openPostgres === undefined) throw new StoreOpenError(`PostgreSQL store: not available in this build (databaseUrl ${shown})`);
  return openPostgres(opts.databaseUrl, { dataDir: opts.dataDir, ...storeOptions });
}
