/**
 * Migrates a PostgreSQL database to this build's schema (`migrations.ts`), tracked in the
 * `svc_schema_migrations` table (one row per applied migration). Any number of processes may
 * call it at once: each migration runs in its own transaction that first takes a
 * transaction-level advisory lock and reads the version again under it, so one process
 * migrates while the others wait and then find nothing left to do. (A transaction-level lock
 * is released by its commit or rollback, so a crashed migrator never leaves it held, and it
 * works through a transaction-pooling proxy, where a session lock would not.)
 */
import type { ClientBase, Pool, PoolClient } from 'pg';
import { StoreOpenError } from '../errors';
import { PG_MIGRATIONS } from './migrations';

export const MIGRATIONS_TABLE = 'svc_schema_migrations';

/**
 * Key of the advisory lock held while migrating ("svc_mig" in ASCII). Advisory locks belong to
 * one database, so migrations of different databases on one server never wait on each other.
 */
export const MIGRATION_LOCK_KEY = '32499791496571239';

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
  version    INTEGER PRIMARY KEY,
  applied_at BIGINT NOT NULL
)`;

/** The newest migration applied to the database `client` is connected to; 0 for a database svc never migrated. */
export async function pgSchemaVersion(client: ClientBase | Pool): Promise<number> {
  const { rows } = await client.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [MIGRATIONS_TABLE]);
  return rows[0]!.present ? versionIn(client) : 0;
}

async function versionIn(client: ClientBase | Pool): Promise<number> {
  const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${MIGRATIONS_TABLE}`);
  return rows[0]!.version;
}

/** What `migratePg` did: the schema version it found and the one it left. */
export interface MigrationRun {
  from: number;
  to: number;
}

/**
 * Apply the migrations the database lacks, one transaction each, under the advisory lock.
 * Throws `StoreOpenError` when the database's schema is newer than this build.
 */
export async function migratePg(pool: Pool, migrations: readonly string[] = PG_MIGRATIONS): Promise<MigrationRun> {
  const client = await pool.connect();
  let failed: Error | undefined;
  try {
    let from: number | null = null;
    for (;;) {
      const version = await step(client, migrations);
      from ??= version;
      if (version === migrations.length) return { from, to: version };
    }
  } catch (err) {
    failed = err as Error;
    throw err;
  } finally {
    // A connection that failed mid-migration is closed, not reused.
    client.release(failed);
  }
}

/**
 * One transaction: take the lock, read the version, apply the next migration if one is due.
 * Returns the version found (the caller stops once it is the build's).
 */
async function step(client: PoolClient, migrations: readonly string[]): Promise<number> {
  // READ COMMITTED whatever the database's default: the version is read after the lock is
  // granted, and must see the migrations committed while this transaction waited for it.
  await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(CREATE_TABLE);
    const version = await versionIn(client);
    if (version > migrations.length) {
      throw new StoreOpenError(`database schema version ${version} is newer than this build supports (${migrations.length}); upgrade svc`);
    }
    if (version < migrations.length) {
      await client.query(migrations[version]!);
      await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, applied_at) VALUES ($1, $2)`, [version + 1, Date.now()]);
    }
    await client.query('COMMIT');
    return version;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
