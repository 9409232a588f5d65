/**
 * Opens the control database: WAL, foreign keys, `synchronous=FULL` (it holds money), and
 * migrations by `PRAGMA user_version`. The only module that creates a connection.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS } from './migrations';
import { StoreOpenError } from './errors';

export type Db = Database.Database;

/** Milliseconds a writer waits for a lock held by another connection. @default 5000 */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/** Mode of the database file and, through it, of SQLite's `-wal` and `-shm` files. */
export const DATABASE_FILE_MODE = 0o600;

/**
 * Create the database file with mode 0600 before SQLite opens it. SQLite would create it 0644
 * (less the umask), and it creates `-wal` and `-shm` with the main file's mode, so this one
 * mode covers all three whatever the umask or the directory's mode. Files an earlier version
 * left readable by others are tightened.
 */
function createPrivateFiles(path: string): void {
  closeSync(openSync(path, 'a', DATABASE_FILE_MODE));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat !== undefined && (stat.mode & 0o077) !== 0) chmodSync(file, DATABASE_FILE_MODE);
  }
}

function pragmaValue(db: Db, name: string): unknown {
  return db.pragma(name, { simple: true });
}

/**
 * Open (creating if needed) and migrate the database at `path`. Throws `StoreOpenError` when
 * a durability setting does not take or the file was written by a newer version.
 */
export function openDatabase(path: string): Db {
  if (path !== ':memory:' && path !== '') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    createPrivateFiles(path);
  }
  const db = new Database(path, { timeout: DEFAULT_BUSY_TIMEOUT_MS });
  try {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (path !== ':memory:' && String(mode).toLowerCase() !== 'wal') {
      throw new StoreOpenError(`journal_mode is ${String(mode)}, expected wal`);
    }
    // better-sqlite3 builds SQLite with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1 (NORMAL): a power
    // loss could drop the last commits. Money lives here, so every commit is fsynced.
    db.pragma('synchronous = FULL');
    const sync = pragmaValue(db, 'synchronous');
    if (sync !== 2) throw new StoreOpenError(`synchronous is ${String(sync)}, expected 2 (FULL)`);
    db.pragma('foreign_keys = ON');
    // Statement journals (foreign-key checks in big settlement batches) stay in memory.
    db.pragma('temp_store = MEMORY');
    if (pragmaValue(db, 'foreign_keys') !== 1) throw new StoreOpenError('foreign_keys did not turn on');
    migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

export function schemaVersion(db: Db): number {
  return Number(pragmaValue(db, 'user_version'));
}

function migrate(db: Db): void {
  const current = schemaVersion(db);
  if (current > MIGRATIONS.length) {
    throw new StoreOpenError(`database schema version ${current} is newer than this build supports (${MIGRATIONS.length}); upgrade svc`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
}
