/**
 * `svcctl store copy` as an operator runs it, through the built CLI and a real control process:
 * while control runs on the data dir the copy exits 1 naming its pid and the target is not
 * touched; once control is stopped, a target that holds svc tables is still refused (exit 1)
 * and a target that is not a PostgreSQL URL is a usage error (exit 2). The URL's password is in
 * no output.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { join } from 'node:path';
import { Pool } from 'pg';
import { SqliteStore } from '../../control/store';
import { migratePg } from '../../control/store/pg/migrate';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { populateStore } from '../fixtures/populated-store';
import { startControlProcess, svcctl, testdirAfterTeardowns } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

const PASSWORD = 'Pg-pass-4-e2e';

if (!skipWithoutPostgres(t)) {
  t.test('control running, then a target that is not empty, then not PostgreSQL', async (t) => {
    const dir = testdirAfterTeardowns(t);
    const store = await SqliteStore.open(join(dir, 'control.db'), { receiptsCore: makeReceipts });
    await populateStore(store, { outcomes: 40, batchCap: 20 });
    await store.close();
    const plain = await createDatabase(t);
    const url = plain.replace('postgres://postgres@', `postgres://postgres:${PASSWORD}@`);
    const pool = new Pool({ connectionString: plain, max: 1 });
    t.teardown(() => pool.end());
    const tables = async () =>
      (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = current_schema()::regnamespace`))
        .rows[0]!.n;

    const control = await startControlProcess(t, { dataDir: dir });
    // `--data-dir` after the command, as docs/cluster.md writes it.
    const running = await svcctl(['store', 'copy', '--data-dir', dir, '--to', url]);
    t.equal(running.code, 1);
    t.equal(running.stderr.trim(), `svcctl: control already running for this data dir (pid ${control.pid}); stop it, then copy its store`);
    t.equal(running.stdout, '');
    t.equal(await tables(), 0, 'the target is not touched');
    t.ok(control.running(), 'control is unharmed');
    await control.stop();

    await migratePg(pool);
    const full = await svcctl(['store', 'copy', '--data-dir', dir, '--to', url, '--json']);
    t.equal(full.code, 1);
    t.match(
      full.stderr.trim(),
      /^svcctl: store copy into postgres:\/\/postgres:\*\*\*@[^ ]+ failed: the target database already holds svc tables/,
    );
    t.equal(full.stdout, '');

    const other = await svcctl(['store', 'copy', '--data-dir', dir, '--to', `mysql://root:${PASSWORD}@127.0.0.1/svc`]);
    t.equal(other.code, 2);
    t.equal(
      other.stderr.trim(),
      'svcctl: --to must be a postgres:// or postgresql:// URL of the target database; got mysql://root:***@127.0.0.1/svc',
    );

    for (const r of [running, full, other]) t.notOk(`${r.stdout}${r.stderr}`.includes(PASSWORD), 'no password in any output');
  });
}
