/**
 * `svcctl store copy` in-process: a target that is not a PostgreSQL URL is a usage error (exit 2)
 * that shows it masked; a data dir without `control.db` or with a control holding its lock exits
 * 1 before the target is touched; with PostgreSQL, the copy's report (tables and rows, both
 * verifiers, `--json` as `StoreCopyView`), exit 1 when the target does not verify or holds svc
 * tables, and the URL's password in no output, whatever happens.
 *
 * The verification opens the target as control would (the PostgreSQL store) and must answer
 * exactly what the verifiers answer on the source's SQLite store; a failing verification is
 * simulated with a verifier that checks the source through the same `verifyTarget` (the copy
 * itself is compared row for row in test/control/store-copy.ts).
 */
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'pg';
import { main } from '../../cli/index';
import { run, type TargetVerifier } from '../../cli/commands/store/copy';
import { CliError } from '../../cli/exit-codes';
import { memoryOutput } from '../../cli/output';
import { SqliteStore } from '../../control/store';
import { migratePg } from '../../control/store/pg/migrate';
import { verifyStore, verifyTarget } from '../../cli/commands/store/verify';
import { acquireInstanceLock } from '../../runtime/instance-lock';
import { StoreCopyView, type StoreVerifyView } from '../../protocol/store-copy';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { populateStore } from '../fixtures/populated-store';
import { makeReceipts } from '../../control/receipts/maker';

const PASSWORD = 'S3cret-pw!';
/** `url` with the password, as typed (percent-encoded where a URL needs it). */
const withPassword = (url: string): string => url.replace('postgres://postgres@', `postgres://postgres:${encodeURIComponent(PASSWORD)}@`);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = memoryOutput();
  const code = await main(args, { env: {}, out });
  return { code, stdout: out.stdout.join('\n'), stderr: out.stderr.join('\n') };
}

const noPassword = (t: Test, ...texts: string[]) => {
  for (const text of texts) {
    t.notOk(text.includes(PASSWORD), 'the password is not shown');
    t.notOk(text.includes(encodeURIComponent(PASSWORD)), 'not even encoded');
  }
};

/** A data dir with a populated SQLite install. */
async function install(t: Test): Promise<string> {
  const dir = t.testdir();
  const store = await SqliteStore.open(join(dir, 'control.db'), { receiptsCore: makeReceipts });
  await populateStore(store, { outcomes: 120, batchCap: 30 });
  await store.close();
  return dir;
}

/** Checks the data dir's own SQLite store, through `verifyTarget`, and records what it was asked. */
const sourceVerifier =
  (asked: string[]): TargetVerifier =>
  (url, dataDir) =>
    verifyTarget(url, dataDir, (u, d) => {
      asked.push(u, d);
      return SqliteStore.open(join(d, 'control.db'), { receiptsCore: makeReceipts });
    });

t.test('a target that is not a PostgreSQL URL is a usage error, shown masked', async (t) => {
  const dir = await install(t);
  for (const to of [`mysql://root:${PASSWORD}@db/svc`, `https://u:${PASSWORD}@h/`, 'not a url', `postgres:u:${PASSWORD}@h/db`]) {
    const r = await cli(['store', 'copy', '--data-dir', dir, '--to', to]);
    t.equal(r.code, 2, `exit 2 for ${to.replace(PASSWORD, '…')}`);
    t.match(r.stderr, /^svcctl: --to must be a postgres:\/\/ or postgresql:\/\/ URL of the target database; got /);
    noPassword(t, r.stdout, r.stderr);
  }
  const masked = await cli(['store', 'copy', '--data-dir', dir, '--to', `mysql://root:${PASSWORD}@db/svc`]);
  t.match(masked.stderr, /got mysql:\/\/root:\*\*\*@db\/svc$/);
  const missing = await cli(['store', 'copy', '--data-dir', dir]);
  t.equal(missing.code, 2, 'no --to');
  t.match(missing.stderr, /--to <url>/);
});

t.test('a data dir without control.db exits 1, saying so', async (t) => {
  const dir = t.testdir({ 'admin.token': 'x' });
  const r = await cli(['store', 'copy', '--data-dir', dir, '--to', 'postgres://u@127.0.0.1:1/db']);
  t.equal(r.code, 1);
  t.equal(
    r.stderr,
    `svcctl: ${join(dir, 'control.db')} does not exist: --data-dir must be the data dir of an install on SQLite (control creates control.db there)`,
  );
  t.notOk(existsSync(join(dir, 'control.sock')), 'no lock taken');
});

t.test('while a control holds the data dir, exit 1 naming it; nothing is copied', async (t) => {
  const dir = await install(t);
  // The lock control takes (control/server.ts), held here by this process.
  const lock = await acquireInstanceLock(dir, { role: 'control' });
  t.teardown(() => lock.release());
  const r = await cli(['store', 'copy', '--data-dir', dir, '--to', 'postgres://u@127.0.0.1:1/db']);
  t.equal(r.code, 1);
  t.equal(r.stderr, `svcctl: control already running for this data dir (pid ${process.pid}); stop it, then copy its store`);
  t.equal(r.stdout, '');
});

t.test('with PostgreSQL', async (t) => {
  if (skipWithoutPostgres(t)) return;
  t.test('a copy is reported table by table, then both verifiers on the PostgreSQL store; exit 0', async (t) => {
    const dir = await install(t);
    const url = withPassword(await createDatabase(t));
    const out = memoryOutput();
    t.equal(await run({ dataDir: dir, to: url }, { out }), 0, out.stderr.join('\n'));
    const text = out.text();
    t.match(
      text,
      new RegExp(
        `^Copied ${join(dir, 'control.db')} into postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/svc_test_\\d+, in one transaction:`,
      ),
    );
    t.match(text, /\n {2}table +rows\n {2}meta +2\n/, 'a table of tables, parents first');
    t.match(text, /\n {2}outcome_records +121\n/);
    t.match(text, /\n {2}unsettled_outcomes +1\n/);
    t.match(text, /\n {2}settled_calls +120\n/);
    t.match(text, /\n32 tables, \d+ rows in \d+\.\d s\.\n/);
    t.match(text, /\nLedger OK: 19 invariants hold over \d+ transfers, \d+ accounts, 120 settled calls in 4 batches\.\n/);
    t.match(
      text,
      /\nReceipts OK: 4 receipts, each signed by a key the store publishes and chained to the one before; refunds [\d.]+ and premiums [\d.]+ equal the ledger's totals\.$/,
    );
    t.same(out.stderr, []);
    noPassword(t, text);
    const relock = await acquireInstanceLock(dir, { role: 'control' });
    await relock.release();
    t.pass('the data dir’s lock is released afterwards');
  });

  t.test('--json: one StoreCopyView; the copy verifies on PostgreSQL exactly as the source on SQLite', async (t) => {
    const dir = await install(t);
    const url = withPassword(await createDatabase(t));
    const out = memoryOutput();
    t.equal(await run({ dataDir: dir, to: url, json: true }, { out }), 0);
    const view = StoreCopyView.parse(out.parsed());
    t.equal(view.ok, true);
    t.equal(view.source, join(dir, 'control.db'));
    t.match(view.target, /^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/svc_test_\d+$/);
    t.equal(view.tables.length, 32);
    t.equal(
      view.rows,
      view.tables.reduce((sum, x) => sum + x.rows, 0),
    );
    const store = await SqliteStore.open(join(dir, 'control.db'), { receiptsCore: makeReceipts });
    t.teardown(() => store.close());
    t.same(view.verify, await verifyStore(store), "the verifiers' own answers");
    noPassword(t, out.text());
  });

  t.test('a copy that does not verify exits 1, naming what failed', async (t) => {
    const dir = await install(t);
    const url = withPassword(await createDatabase(t));
    const good = await sourceVerifier([])(url, dir);
    const bad: StoreVerifyView = {
      ok: false,
      ledger: { ...good.ledger, ok: false, violation: 'batch 2 does not match the calls settled in it' },
      receipts: { ...good.receipts, ok: false, first_bad_batch: 3, reason: 'batch 3: no receipt' },
    };
    const out = memoryOutput();
    t.equal(await run({ dataDir: dir, to: url }, { out }, () => Promise.resolve(bad)), 1);
    t.notMatch(out.text(), /OK:/);
    t.same(
      out.stderr.map((line) => line.replace(/postgres:\/\/\S+/, 'URL')),
      [
        'svcctl: the copy in URL fails ledger verify: batch 2 does not match the calls settled in it',
        'svcctl: the copy in URL fails receipts verify: batch 3: no receipt',
      ],
    );
    noPassword(t, out.text(), ...out.stderr);

    const json = memoryOutput();
    const again = withPassword(await createDatabase(t));
    t.equal(await run({ dataDir: dir, to: again, json: true }, { out: json }, () => Promise.resolve(bad)), 1);
    t.equal(StoreCopyView.parse(json.parsed()).ok, false, '--json says it too');
  });

  t.test('a copy that cannot be verified says it is committed; exit 1', async (t) => {
    const dir = await install(t);
    const url = withPassword(await createDatabase(t));
    const out = memoryOutput();
    const failing: TargetVerifier = () => Promise.reject(new Error(`connection to ${url} lost (password ${PASSWORD})`));
    const err = (await run({ dataDir: dir, to: url }, { out }, failing).catch((e: unknown) => e)) as CliError;
    t.type(err, CliError);
    t.match(
      err.message,
      /^the copy into postgres:\/\/postgres:\*\*\*@\S+ is committed \(\d+ rows\), but it could not be verified: connection to /,
    );
    noPassword(t, err.message, out.text());
  });

  t.test('a target holding svc tables: exit 1, the target left alone, no password', async (t) => {
    const dir = await install(t);
    const plain = await createDatabase(t);
    const pool = new Pool({ connectionString: plain, max: 1 });
    t.teardown(() => pool.end());
    await migratePg(pool);
    const r = await cli(['store', 'copy', '--data-dir', dir, '--to', withPassword(plain)]);
    t.equal(r.code, 1);
    t.match(
      r.stderr,
      /^svcctl: store copy into postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/svc_test_\d+ failed: the target database already holds svc tables \(.*\); copy into an empty database$/,
    );
    t.equal((await pool.query(`SELECT count(*)::int AS n FROM keys`)).rows[0].n, 0, 'nothing copied into it');
    noPassword(t, r.stdout, r.stderr);
  });

  t.test('a target that cannot be reached: exit 1, no password', async (t) => {
    const dir = await install(t);
    const r = await cli(['store', 'copy', '--data-dir', dir, '--to', `postgres://postgres:${encodeURIComponent(PASSWORD)}@127.0.0.1:1/db`]);
    t.equal(r.code, 1);
    t.match(r.stderr, /^svcctl: store copy into postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/db failed: connect ECONNREFUSED/);
    noPassword(t, r.stdout, r.stderr);
  });
});
