/**
 * Two control processes on one PostgreSQL database, each with its own data dir: the second
 * accepts the tokens the first made, a change made through one reaches
 * a gateway streaming from the other (NOTIFY → the other's hub → the
 * gateway), and when the control holding the settler's lease is killed (SIGKILL: it gives
 * nothing up), the other takes the lease over once it lapses.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../fixtures/cli';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { health, startControlProcess, startGatewayProcess, testdirAfterTeardowns, waitFor } from '../fixtures/stack';

if (!skipWithoutPostgres(t)) {
  t.test('a change through one control reaches the gateways of another; a killed leader is replaced', async (t) => {
    const root = testdirAfterTeardowns(t);
    const databaseUrl = await createDatabase(t);
    const env = { SVC_DATABASE_URL: databaseUrl, SVC_SETTLER_CADENCE_MS: '50', SVC_SETTLER_LEASE_S: '1' };
    const dirA = join(root, 'a');
    const dirB = join(root, 'b');
    const a = await startControlProcess(t, { dataDir: dirA, env });
    const b = await startControlProcess(t, { dataDir: dirB, env });
    const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();
    // B accepts the tokens A made, and writes none of its own.
    const viaB = (args: string[]) => runCli(args, { control: b.url, token: read(dirA, 'admin.token') });
    t.notOk(existsSync(join(dirB, 'admin.token')), 'B writes no admin token file');
    const idA = read(dirA, 'control-id');
    const idB = read(dirB, 'control-id');

    const gw = await startGatewayProcess(t, { dataDir: dirA, controlUrl: a.url, id: 'gw-a' });
    const set = await viaB(['flag', 'set', 'maintenance_mode', 'on', '--json']);
    t.equal(set.code, 0, set.stderr);
    const version = (await viaB(['status', '--json'])).json().version as number;
    await waitFor(
      async () => (await health(gw.url)).body.snapshot_version === version,
      'the gateway of A to apply the change made through B',
    );
    t.equal((await health(gw.url)).body.reason, 'maintenance', 'and to enforce it');

    const before = await viaB(['settler', 'status', '--json']);
    t.same(before.json().leader, { id: idA, url: a.url }, 'A, started first, settles');
    await a.kill('SIGKILL');
    await waitFor(async () => (await viaB(['settler', 'status', '--json'])).json().leader?.id === idB, 'B to take over the lease A held');
    const status = (await viaB(['status', '--json'])).json();
    t.match(
      status.controls,
      [
        { id: idA, leader: false },
        { id: idB, leader: true },
      ],
      'the killed control stays listed, not leading, until it is forgotten',
    );
  });
}
