/**
 * `svcctl store copy --data-dir D --to URL`: the data dir's SQLite store (`D/control.db`, read
 * read-only) copied into an empty PostgreSQL database in one transaction
 * (`control/store/pg/copy.ts`), then checked there by the checks of `ledger verify` and
 * `receipts verify` (`verifyTarget`). Exit 0 only when both pass.
 *
 * Control must be stopped: the command takes the data dir's lock, so it refuses while a
 * control runs and no control starts while it copies. Nothing in the data dir is changed:
 * the tokens, the receipt signing key and the backfill record stay there, and control started
 * on the copy is given the same data dir. The URL is printed with its password masked, and
 * the password never appears in any message.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { copySqliteToPostgres, type CopyResult } from '../../../control/store/pg/copy';
import { makeReceipts } from '../../../control/receipts/maker';
import { pgOpener, verifyTarget } from './verify';
import { UNPARSABLE_DATABASE_URL, databaseUrlSecrets, maskDatabaseUrl } from '../../../protocol/database-url';
import { InstanceLockedError, acquireInstanceLock, controlRunningMessage, type InstanceLock } from '../../../runtime/instance-lock';
import type { StoreCopyView, StoreVerifyView } from '../../../protocol/store-copy';
import { CliError, EXIT_FAILURE, EXIT_OK, UsageError } from '../../exit-codes';
import { formatUnits } from '../../money';
import { table, type Output } from '../../output';

/** The SQLite store's file in a data dir. */
export const SQLITE_FILE = 'control.db';

export interface CopyOptions {
  dataDir: string;
  to: string;
  json?: boolean;
}

/** Checks the store at `url` (the copy) with the data dir's key; `verifyTarget` unless a test says otherwise. */
export type TargetVerifier = (url: string, dataDir: string) => Promise<StoreVerifyView>;

/** `url` when it is a PostgreSQL URL; a usage error (exit 2) that shows it masked otherwise. */
function postgresUrl(url: string): string {
  const masked = maskDatabaseUrl(url);
  const protocol = masked === UNPARSABLE_DATABASE_URL ? null : new URL(url).protocol;
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new UsageError(`--to must be a postgres:// or postgresql:// URL of the target database; got ${masked}`);
  }
  return url;
}

/** `text` without the URL's password (or any other secret it holds), however it is spelled. */
function withoutPassword(text: string, url: string): string {
  let out = text;
  for (const secret of databaseUrlSecrets(url)) out = out.split(secret).join('***');
  return out;
}

async function lockDataDir(dataDir: string): Promise<InstanceLock> {
  try {
    return await acquireInstanceLock(dataDir, { role: 'control' });
  } catch (err) {
    if (err instanceof InstanceLockedError) throw new CliError(`${controlRunningMessage(err.pid)}; stop it, then copy its store`);
    throw err;
  }
}

function printCopy(out: Output, view: StoreCopyView, seconds: number): void {
  out.line(`Copied ${view.source} into ${view.target}, in one transaction:`);
  out.line(
    table(
      ['table', 'rows'],
      view.tables.map((t) => [t.name, t.rows]),
    )
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n'),
  );
  out.line(`${view.tables.length} tables, ${view.rows} rows in ${seconds.toFixed(1)} s.`);
}

function printVerify(out: Output, verify: StoreVerifyView): void {
  const { ledger, receipts } = verify;
  if (ledger.ok) {
    const c = ledger.counts;
    out.line(
      `Ledger OK: ${ledger.checks.length} invariants hold over ${c.transfers} transfers, ${c.accounts} accounts, ${c.settled_calls} settled calls in ${c.batches} batches.`,
    );
  }
  if (receipts.ok) {
    const span = receipts.receipts === 0 ? 'no receipts yet' : `${receipts.receipts} receipt${receipts.receipts === 1 ? '' : 's'}`;
    out.line(
      `Receipts OK: ${span}, each signed by a key the store publishes and chained to the one before; refunds ${formatUnits(receipts.refunds)} and premiums ${formatUnits(receipts.premiums)} equal the ledger's totals.`,
    );
  }
}

export async function run(
  opts: CopyOptions,
  deps: { out: Output },
  verify: TargetVerifier = (url, dataDir) => verifyTarget(url, dataDir, pgOpener(makeReceipts)),
): Promise<number> {
  const url = postgresUrl(opts.to);
  const target = maskDatabaseUrl(url);
  const dataDir = resolve(opts.dataDir);
  const source = join(dataDir, SQLITE_FILE);
  if (!existsSync(source)) {
    throw new CliError(
      `${source} does not exist: --data-dir must be the data dir of an install on SQLite (control creates ${SQLITE_FILE} there)`,
    );
  }
  const lock = await lockDataDir(dataDir);
  try {
    const started = performance.now();
    let copied: CopyResult;
    // Ctrl-C stops the copy between two batches, which leaves the target as it was; a second one ends the process.
    const interrupt = new AbortController();
    const stop = () => interrupt.abort();
    process.once('SIGINT', stop).once('SIGTERM', stop);
    try {
      copied = await copySqliteToPostgres(source, url, { signal: interrupt.signal });
    } catch (err) {
      throw new CliError(`store copy into ${target} failed: ${withoutPassword((err as Error).message, url)}`);
    } finally {
      process.off('SIGINT', stop).off('SIGTERM', stop);
    }
    const seconds = (performance.now() - started) / 1000;
    let verified: StoreVerifyView;
    try {
      verified = await verify(url, dataDir);
    } catch (err) {
      throw new CliError(
        `the copy into ${target} is committed (${copied.rows} rows), but it could not be verified: ${withoutPassword((err as Error).message, url)}`,
      );
    }
    const view: StoreCopyView = { ok: verified.ok, source, target, tables: copied.tables, rows: copied.rows, verify: verified };
    if (opts.json) deps.out.json(view);
    else {
      printCopy(deps.out, view, seconds);
      printVerify(deps.out, verified);
    }
    if (!verified.ledger.ok) deps.out.error(`svcctl: the copy in ${target} fails ledger verify: ${verified.ledger.violation}`);
    if (!verified.receipts.ok) deps.out.error(`svcctl: the copy in ${target} fails receipts verify: ${verified.receipts.reason}`);
    return verified.ok ? EXIT_OK : EXIT_FAILURE;
  } finally {
    await lock.release();
  }
}
