/**
 * A throwaway PostgreSQL cluster (demo/throwaway-postgres.ts) that cannot start says
 * why by code: `SVC_ERR_PG_CLUSTER_START` when there is no PostgreSQL to start or it does not
 * answer, `SVC_ERR_PG_SERVER_EXITED` (with the server's log) when the server stops first.
 */
import t, { type Test } from 'tap';
import { PG_BINDIR_ENV, startCluster } from '../../demo/throwaway-postgres';
import { hasCode } from '../../protocol/coded-error';
import { skipWithoutPostgres } from '../fixtures/postgres';

/** Set `name` in this process's environment for the rest of `t`. */
function setEnv(t: Test, name: string, value: string): void {
  const saved = process.env[name];
  process.env[name] = value;
  t.teardown(() => {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  });
}

t.test('no PostgreSQL to start: ClusterStartError', async (t) => {
  setEnv(t, PG_BINDIR_ENV, '/nonexistent');
  const err = await startCluster().then(
    () => null,
    (err: unknown) => err,
  );
  t.ok(hasCode(err, 'SVC_ERR_PG_CLUSTER_START'), 'coded');
  t.match(err, { name: 'ClusterStartError', message: /initdb and postgres are not in SVC_TEST_PG_BINDIR=\/nonexistent/ });
});

t.test('a server that exits before it accepts connections: ServerExited, with its log', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const started = performance.now();
  const err = await startCluster({ settings: { shared_buffers: 'not-a-size' } }).then(
    () => null,
    (err: unknown) => err,
  );
  t.comment(`refused in ${Math.round(performance.now() - started)} ms`);
  t.ok(hasCode(err, 'SVC_ERR_PG_SERVER_EXITED'), 'coded');
  t.match(err, { name: 'ServerExited', log: /shared_buffers/ });
});
