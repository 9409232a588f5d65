/**
 * A database URL without a password, against a server that wants one (`scram-sha-256` for the
 * role on loopback): node-postgres fails the connection in the middle of the authentication
 * exchange, with the server still waiting for the client's answer. Control must close that
 * connection and exit with the coded error at once, not once the server gives up on it
 * (`authentication_timeout`, 60 s by default).
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`); the cluster is its own, as the shared
 * one trusts every loopback connection.
 */
import t from 'tap';
import { join } from 'node:path';
import { Client } from 'pg';
import { startCluster } from '../../demo/throwaway-postgres';
import { skipWithoutPostgres } from '../fixtures/postgres';
import { spawnCli } from '../fixtures/cli';
import { controlListenArgs, testdirAfterTeardowns } from '../fixtures/stack';

const ROLE = 'svc_pw';
const PASSWORD = 'Hunter2-9f3k';
/** The target is under a second; the assertion leaves room for a loaded host. */
const EXIT_LIMIT_MS = 5_000;

t.test('control started on a URL without the password the server wants exits with the coded error at once', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const cluster = await startCluster({ hba: [`host all ${ROLE} 127.0.0.1/32 scram-sha-256`] });
  t.teardown(() => cluster.stop());
  await cluster.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
  await cluster.query(`CREATE DATABASE svc OWNER ${ROLE}`);
  const url = (password: string) => `postgres://${ROLE}${password}@127.0.0.1:${cluster.port}/svc`;

  // The server does want the password, and takes it.
  const withPassword = new Client(url(`:${PASSWORD}`));
  await withPassword.connect();
  await withPassword.end();

  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const began = performance.now();
  let errorAt: number | null = null;
  const run = spawnCli(['serve', 'control', '--data-dir', dataDir, ...controlListenArgs()], {
    env: { SVC_DATABASE_URL: url('') },
    onStderr: (text) => {
      if (errorAt === null && text.includes('PostgreSQL store at')) errorAt = performance.now();
    },
  });
  const res = await run;
  const exitMs = Math.round(performance.now() - began);
  const afterError = errorAt === null ? null : Math.round(performance.now() - errorAt);
  t.comment(`exited ${exitMs} ms after the start, ${afterError ?? '?'} ms after printing the error (target: under 1 s)`);
  t.equal(res.signal, null, 'on its own, not killed at the spawn limit');
  t.equal(res.code, 1, `control exits 1 (stderr: ${res.stderr})`);
  // The store-open refusal (SVC_ERR_STORE_OPEN), as serve prints it: the store, then node-postgres' reason.
  t.match(res.stderr, `svcctl: PostgreSQL store at ${url('')}: SASL`, 'with the store-open error, naming the store and the reason');
  t.ok(exitMs < EXIT_LIMIT_MS, `it exits within ${EXIT_LIMIT_MS} ms (${exitMs} ms)`);
});
