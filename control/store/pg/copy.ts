/**
 * `svcctl store copy`: a data dir's SQLite store copied into an empty PostgreSQL database.
 *
 * - The SQLite file is opened read-only and read in one read transaction (one state, whatever
 *   else opens it meanwhile); it must be at this build's schema version.
 * - The target must hold none of the store's tables and no `svc_schema_migrations`; it is
 *   migrated (`migratePg`), then every table is copied in ONE transaction: the rows the
 *   migration seeded (`meta`, `flags`, `account_balances`) give way to the source's, tables
 *   go parents first (the target's foreign keys decide the order), rows in batches of
 *   {@link COPY_BATCH_ROWS} through `unnest`, every value as stored (identity ids included),
 *   then each identity sequence is moved past the ids copied.
 * - Which tables and columns there are is read from both databases, never listed here, and
 *   they must agree (PostgreSQL's extra columns are {@link FILLED_FROM}): a table added to the
 *   schema later cannot be left behind unnoticed.
 * - All or nothing: when the copy fails after the migration, the tables the migration created
 *   are dropped again, leaving the target as it was found, ready for another attempt.
 */
import Database from 'better-sqlite3';
import { Pool, type PoolClient } from 'pg';
import type { Db } from '../db';
import { MIGRATIONS } from '../migrations';
import { PgClient } from './client';
import { MIGRATIONS_TABLE, migratePg } from './migrate';
import { PG_TYPES } from './types';
import { CodedError } from '../../../protocol/coded-error';
import { canonicalCallId } from '../../../protocol/outcome';

/** Rows per INSERT (each column one array parameter). @default 5000 */
export const COPY_BATCH_ROWS = 5_000;
/** Milliseconds to wait for the target to accept a connection. @default 10000 */
export const COPY_CONNECT_TIMEOUT_MS = 10_000;

/**
 * PostgreSQL's columns that SQLite's tables do not have, and the SQLite expression each is
 * filled from (`migrations/001-initial.ts`): `keys.seq` is the rowid order the full snapshot
 * pages keys in.
 */
export const FILLED_FROM: Readonly<Record<string, Readonly<Record<string, string>>>> = { keys: { seq: 'rowid' } };

/** A copy refused or failed, with a sentence for the operator; the target is left as it was found. */
export class StoreCopyError extends CodedError {
  override readonly code = 'SVC_ERR_STORE_COPY';
  constructor(message: string) {
    super(message);
  }
}

export interface CopiedTable {
  name: string;
  rows: number;
}

export interface CopyResult {
  /** Every table, in the order copied (parents first). */
  tables: CopiedTable[];
  rows: number;
}

interface SourceTable {
  name: string;
  columns: string[];
  withoutRowid: boolean;
}

interface TargetColumn {
  name: string;
  /** As `format_type` spells it: the cast of its array parameter. */
  type: string;
  /** The sequence behind an identity column, or null. */
  sequence: string | null;
}

/** A table's copy: the SQLite expression and the PostgreSQL column of each value. */
interface TablePlan {
  name: string;
  select: string;
  insert: string;
  columns: TargetColumn[];
}

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

export interface CopyOptions {
  /** Stops the copy between two batches (Ctrl-C); it fails as any copy does, leaving the target as it was. */
  signal?: AbortSignal;
}

/** Copy the SQLite store at `sqlitePath` into the empty PostgreSQL database at `url`. */
export async function copySqliteToPostgres(sqlitePath: string, url: string, opts: CopyOptions = {}): Promise<CopyResult> {
  const source = openSource(sqlitePath);
  try {
    const tables = sourceTables(source);
    const pool = new Pool({
      Client: PgClient,
      connectionString: url,
      types: PG_TYPES,
      max: 1,
      connectionTimeoutMillis: COPY_CONNECT_TIMEOUT_MS,
      application_name: 'svc-store-copy',
    });
    // An idle connection the server closed is dropped by the pool; the next query opens another.
    pool.on('error', () => undefined);
    try {
      const before = await targetTables(pool, true);
      const present = [...tables.map((t) => t.name), ...sourceViews(source), MIGRATIONS_TABLE].filter((name) => before.has(name)).sort();
      if (present.length > 0) {
        throw new StoreCopyError(`the target database already holds svc tables (${present.join(', ')}); copy into an empty database`);
      }
      const run = await migratePg(pool);
      if (run.from !== 0) throw new StoreCopyError('another process migrated the target database while the copy began; nothing was copied');
      const created = [...(await targetTables(pool))].filter((name) => !before.has(name));
      try {
        return await copyTables(
          source,
          tables,
          pool,
          created.filter((name) => name !== MIGRATIONS_TABLE),
          opts.signal,
        );
      } catch (err) {
        await dropTables(pool, created).catch((dropErr: unknown) => {
          throw new StoreCopyError(
            `${(err as Error).message}; the tables the copy created could not be dropped again (${(dropErr as Error).message}): drop them, or use another database`,
          );
        });
        throw err;
      }
    } finally {
      await pool.end();
    }
  } finally {
    source.close();
  }
}

function openSource(path: string): Db {
  let db: Db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreCopyError(`cannot open ${path} to read it: ${(err as Error).message}`);
  }
  const version = Number(db.pragma('user_version', { simple: true }));
  if (version !== MIGRATIONS.length) {
    db.close();
    throw new StoreCopyError(
      version < MIGRATIONS.length
        ? `${path} is at schema version ${version}, this build's is ${MIGRATIONS.length}: start control of this build on the data dir once (it migrates the database), stop it, then copy`
        : `${path} is at schema version ${version}, newer than this build supports (${MIGRATIONS.length}); upgrade svc`,
    );
  }
  return db;
}

/** The store's tables in SQLite, in the order they were created; SQLite's own (`sqlite_sequence`, …) left out. */
function sourceTables(db: Db): SourceTable[] {
  const names = db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid`)
    .pluck()
    .all() as string[];
  const withoutRowid = new Set(db.prepare(`SELECT name FROM pragma_table_list WHERE wr = 1`).pluck().all() as string[]);
  return names.map((name) => ({
    name,
    columns: db.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).pluck().all(name) as string[],
    withoutRowid: withoutRowid.has(name),
  }));
}

/** The store's views in SQLite (`outcomes`): not copied (they hold no rows), but a target that has one is not empty. */
function sourceViews(db: Db): string[] {
  return db.prepare(`SELECT name FROM sqlite_master WHERE type = 'view'`).pluck().all() as string[];
}

/** The tables (and with `views`, the views) of the schema the target's migrations write to (its current schema). */
async function targetTables(client: Pool | PoolClient, views = false): Promise<Set<string>> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = ANY($1)`,
    [views ? ['r', 'p', 'v'] : ['r', 'p']],
  );
  return new Set(rows.map((r) => r.name));
}

/** Drop what the copy created; CASCADE takes the views on them (nothing else can depend on tables this new). */
async function dropTables(pool: Pool, tables: readonly string[]): Promise<void> {
  if (tables.length > 0) await pool.query(`DROP TABLE IF EXISTS ${tables.map(quote).join(', ')} CASCADE`);
}

async function targetColumns(client: PoolClient): Promise<Map<string, TargetColumn[]>> {
  const { rows } = await client.query<{ table: string } & TargetColumn>(
    `SELECT c.relname AS table, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
            pg_get_serial_sequence(quote_ident(c.relname), a.attname) AS sequence
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
     ORDER BY c.relname, a.attnum`,
  );
  const columns = new Map<string, TargetColumn[]>();
  for (const { table, ...column } of rows) columns.set(table, [...(columns.get(table) ?? []), column]);
  return columns;
}

/** `tables` ordered so that every table comes after the tables its foreign keys reference (then in SQLite's order). */
async function parentsFirst(client: PoolClient, tables: readonly SourceTable[]): Promise<SourceTable[]> {
  const { rows } = await client.query<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent
     FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
     WHERE k.contype = 'f' AND c.relnamespace = current_schema()::regnamespace`,
  );
  const ordered: SourceTable[] = [];
  const placed = new Set<string>();
  let left = [...tables];
  while (left.length > 0) {
    const ready = left.filter((t) => rows.every((fk) => fk.child !== t.name || fk.parent === t.name || placed.has(fk.parent)));
    if (ready.length === 0)
      throw new StoreCopyError(`the target's foreign keys reference in a cycle: ${left.map((t) => t.name).join(', ')}`);
    for (const t of ready) placed.add(t.name);
    ordered.push(...ready);
    left = left.filter((t) => !placed.has(t.name));
  }
  return ordered;
}

/**
 * Tables only PostgreSQL's schema has: the controls running on the database, the settler's
 * lease among them and the digests of their tokens (migration 3), the snapshot they share
 * (migration 8), with nothing in SQLite to copy from (the first control on the copy stores its
 * data dir's tokens; the first full snapshot a gateway needs is built).
 */
export const PG_ONLY_TABLES: readonly string[] = [
  'controls',
  'settler_lease',
  'control_tokens',
  'shared_snapshots',
  'shared_snapshot_lines',
];

/** Each table's copy, or a loud failure where SQLite's tables and columns are not PostgreSQL's. */
function plan(tables: readonly SourceTable[], schemaTables: readonly string[], columns: Map<string, TargetColumn[]>): TablePlan[] {
  const names = new Set(tables.map((t) => t.name));
  const onlySqlite = tables.map((t) => t.name).filter((name) => !schemaTables.includes(name));
  const onlyPg = schemaTables.filter((name) => !names.has(name) && !PG_ONLY_TABLES.includes(name));
  if (onlySqlite.length > 0 || onlyPg.length > 0) {
    const parts = [
      onlySqlite.length > 0 ? `only in SQLite: ${onlySqlite.join(', ')}` : null,
      onlyPg.length > 0 ? `only in PostgreSQL: ${onlyPg.sort().join(', ')}` : null,
    ];
    throw new StoreCopyError(`SQLite's store and PostgreSQL's schema have different tables (${parts.filter(Boolean).join('; ')})`);
  }
  return tables.map((table) => {
    const target = columns.get(table.name) ?? [];
    const filled = FILLED_FROM[table.name] ?? {};
    const shared = target.filter((c) => !(c.name in filled)).map((c) => c.name);
    const missing = Object.keys(filled).filter((name) => !target.some((c) => c.name === name));
    if (shared.join() !== table.columns.join() || missing.length > 0) {
      throw new StoreCopyError(
        `table ${table.name} has other columns in SQLite (${table.columns.join(', ')}) than in PostgreSQL (${target.map((c) => c.name).join(', ')})`,
      );
    }
    const select = target.map((c) => filled[c.name] ?? quote(c.name)).join(', ');
    return {
      name: table.name,
      select: `SELECT ${select} FROM ${quote(table.name)}${table.withoutRowid ? '' : ' ORDER BY rowid'}`,
      insert: `INSERT INTO ${quote(table.name)} (${target.map((c) => quote(c.name)).join(', ')})
               SELECT * FROM unnest(${target.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`,
      columns: target,
    };
  });
}

async function copyTables(
  source: Db,
  tables: SourceTable[],
  pool: Pool,
  schemaTables: string[],
  signal: AbortSignal | undefined,
): Promise<CopyResult> {
  const client = await pool.connect();
  let failed: Error | undefined;
  try {
    const plans = plan(await parentsFirst(client, tables), schemaTables, await targetColumns(client));
    const autoincrement = autoincrementCounters(source);
    await client.query('BEGIN');
    // The rows the migration seeded give way to the source's.
    await client.query(`TRUNCATE ${plans.map((p) => quote(p.name)).join(', ')}`);
    source.exec('BEGIN');
    try {
      const copied: CopiedTable[] = [];
      for (const p of plans) copied.push({ name: p.name, rows: await copyTable(source, client, p, signal) });
      for (const p of plans) {
        for (const column of p.columns) {
          if (column.sequence !== null) await moveSequence(client, p.name, column, autoincrement.get(p.name) ?? 0);
        }
      }
      await client.query('COMMIT');
      return { tables: copied, rows: copied.reduce((sum, t) => sum + t.rows, 0) };
    } finally {
      source.exec('COMMIT');
    }
  } catch (err) {
    failed = err as Error;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    // A connection that failed mid-copy is closed, not reused.
    client.release(failed);
  }
}

/** SQLite's AUTOINCREMENT counters (`sqlite_sequence`): the highest id each table ever gave, deleted rows included. */
function autoincrementCounters(db: Db): Map<string, number> {
  const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'`).get() !== undefined;
  if (!exists) return new Map();
  const rows = db.prepare(`SELECT name, seq FROM sqlite_sequence`).all() as { name: string; seq: number }[];
  return new Map(rows.map((r) => [r.name, r.seq]));
}

function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new StoreCopyError('interrupted');
}

async function copyTable(source: Db, client: PoolClient, p: TablePlan, signal: AbortSignal | undefined): Promise<number> {
  stopIfAborted(signal);
  // Integers as BigInt: every value reaches PostgreSQL exactly as SQLite holds it.
  const rows = source.prepare(p.select).raw(true).safeIntegers(true).iterate() as IterableIterator<unknown[]>;
  const width = p.columns.length;
  const empty = () => Array.from({ length: width }, (): unknown[] => []);
  let batch = empty();
  let pending = 0;
  let copied = 0;
  const flush = async () => {
    stopIfAborted(signal);
    const { rowCount } = await client.query(p.insert, batch);
    if (rowCount !== pending) throw new StoreCopyError(`table ${p.name}: ${pending} rows sent, ${rowCount} written`);
    copied += pending;
    batch = empty();
    pending = 0;
  };
  const uuids = p.columns.flatMap((c, i) => (c.type === 'uuid' ? [i] : []));
  for (const row of rows) {
    for (const i of uuids) checkUuid(p, i, row[i]);
    for (let i = 0; i < width; i++) batch[i]!.push(row[i]);
    if (++pending === COPY_BATCH_ROWS) await flush();
  }
  if (pending > 0) await flush();
  return copied;
}

/**
 * A value for a `uuid` column (call ids, PostgreSQL's migration 10) must be one the column
 * prints back unchanged: a lowercase UUID, as ingest stores them. Any other would be rewritten
 * by the cast, and a call id is hashed into its batch's signed receipt as it is.
 */
function checkUuid(p: TablePlan, column: number, value: unknown): void {
  if (value === null || (typeof value === 'string' && canonicalCallId(value) === value)) return;
  throw new StoreCopyError(
    `table ${p.name}: ${p.columns[column]!.name} ${JSON.stringify(value)} is not a lowercase UUID, so PostgreSQL would not store it as it is`,
  );
}

/** Move an identity column's sequence past the ids copied (and past every id SQLite's AUTOINCREMENT gave). */
async function moveSequence(client: PoolClient, table: string, column: TargetColumn, counter: number): Promise<void> {
  const { rows } = await client.query<{ max: number | null }>(`SELECT max(${quote(column.name)}) AS max FROM ${quote(table)}`);
  const last = Math.max(rows[0]!.max ?? 0, counter);
  // The next id is `last` + 1, or 1 for a table that never had a row (`is_called` false).
  await client.query(`SELECT setval($1::regclass, $2, $3)`, [column.sequence, Math.max(last, 1), last > 0]);
}
