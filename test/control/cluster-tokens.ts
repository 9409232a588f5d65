/**
 * The tokens of several controls on one PostgreSQL database: the first control's admin, sync and
 * metrics tokens are stored as digests and accepted by every later control, which writes no
 * token files of its own; a later control holding a different token (a file in its data dir,
 * or configured) does not start, and says why. SQLite keeps one control's tokens in its data dir.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { Client } from 'pg';
import { join } from 'node:path';
import { tokenWhere } from '../../cli/commands/serve/control';
import { startTestControl } from '../fixtures/control';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';

if (!skipWithoutPostgres(t)) {
  t.test('a later control accepts the tokens the first one made, and writes none', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    const second = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl } });
    const firstId = first.handle.ctx.controlId;
    const boot = first.handle.bootstrap;
    const later = second.handle.bootstrap;
    for (const [name, file] of [
      ['adminToken', 'admin.token'],
      ['syncToken', 'sync.token'],
      ['metricsToken', 'metrics.token'],
    ] as const) {
      t.equal(boot[name].created, true, `the first control made its ${file}`);
      t.notOk(existsSync(join(root, 'b', file)), `the later control wrote no ${file}`);
      t.equal(later[name].token, null, `the later control does not know the ${name}`);
      t.same(later[name].from, { control_id: firstId, file: join(root, 'a', file) }, `it knows where the first wrote ${file}`);
    }

    t.equal(
      tokenWhere(later.adminToken, 'SVC_ADMIN_TOKEN'),
      `shared: made by control ${firstId}, written to ${join(root, 'a', 'admin.token')} on its host`,
      "the later control's ready lines say where the first wrote the token",
    );
    t.equal(tokenWhere(boot.adminToken, 'SVC_ADMIN_TOKEN'), `${join(root, 'a', 'admin.token')} (created now, mode 0600)`);

    const ok = await second.admin('GET', '/_admin/v1/status', undefined, first.adminToken);
    t.equal(ok.status, 200, "the first control's admin token works on the second");
    const change = await second.admin('POST', '/_admin/v1/changelog', { text: 'through the second' }, first.adminToken);
    t.equal(change.body.author, 'root', 'named root, the admin token’s operator, in the audit trail');
    const metrics = await second.request(`${second.urls.control}/metrics`, {
      headers: { authorization: `Bearer ${boot.metricsToken.token}` },
    });
    t.equal(metrics.status, 200, 'so does its metrics token');
    const sync = await second.request(`${second.urls.control}/_sync/v1/stream?gateway_id=gw-x`, {
      headers: { authorization: `Bearer ${boot.syncToken.token}` },
      method: 'HEAD',
    });
    t.not(sync.status, 401, 'and its sync token');
    t.equal((await second.admin('GET', '/_admin/v1/status', undefined, 'svc_admin_not-the-token-of-anyone-at-all-0123')).status, 401);

    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    t.teardown(() => db.end());
    const stored = await db.query<{ name: string; control_id: string; file: string | null; n: number }>(
      `SELECT name, control_id, file, length(sha256) AS n FROM control_tokens ORDER BY name`,
    );
    t.same(
      stored.rows,
      ['admin', 'metrics', 'sync'].map((name) => ({ name, control_id: firstId, file: join(root, 'a', `${name}.token`), n: 32 })),
      'the database holds digests of the first control’s tokens, with where it wrote them',
    );
    const text =
      JSON.stringify(stored.rows) + JSON.stringify((await db.query(`SELECT encode(sha256, 'escape') AS s FROM control_tokens`)).rows);
    t.notOk(text.includes(first.adminToken), 'never a token');
  });

  t.test('a later control with a different token does not start', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    // Its own data dir from a SQLite install: its own admin token file.
    const own = await startTestControl(t, { dataDir: join(root, 'b') });
    await own.close();
    await t.rejects(startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl } }), {
      name: 'ControlStartError',
      message: new RegExp(
        `^${join(root, 'b', 'admin.token')} is not the admin token of the controls on this database \\(made by ${first.handle.ctx.controlId}, written to ${join(root, 'a', 'admin.token')} on its host\\); delete ${join(root, 'b', 'admin.token')} to use it$`,
      ),
    });
    await t.rejects(
      startTestControl(t, {
        dataDir: join(root, 'c'),
        flags: { databaseUrl },
        env: { SVC_ADMIN_TOKEN: 'an-operator-chosen-token-that-differs-0123' },
      }),
      { name: 'ControlStartError', message: /^SVC_ADMIN_TOKEN is not the admin token .*; set SVC_ADMIN_TOKEN to that token, or unset it$/ },
    );
    const same = await startTestControl(t, {
      dataDir: join(root, 'd'),
      flags: { databaseUrl },
      env: { SVC_ADMIN_TOKEN: first.adminToken },
    });
    t.equal((await same.admin('GET', '/_admin/v1/status')).status, 200, 'configured with the same token, it starts');
  });
}
