/**
 * A control that hangs rather than dies, with real processes: two controls on one PostgreSQL
 * database, a gateway on the first. The first is stopped (SIGSTOP: its sockets stay open and
 * its kernel still accepts connections, but nothing answers), and a key is revoked through the
 * second. The gateway must refuse the key within 10 s (it hears no beat for 3 beats, moves to
 * the second control and takes the revoke as a delta), keep serving the other keys meanwhile,
 * and get its acks and its outcome batches to the second control (the batch left on the hung
 * one too); a gateway started meanwhile with the hung control first on its list must not wait
 * on it for good; and once the first control runs again, every outcome is stored exactly once
 * and the gateways stay where they are.
 */
import t from 'tap';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, CONTROL_ID_FILE, SYNC_TOKEN_FILE } from '../../control/bootstrap';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import {
  adminRequest,
  assertProblem,
  GENEROUS_LIMITS,
  health,
  request,
  type ServiceProcess,
  spawnService,
  startControlProcess,
  testdirAfterTeardowns,
  waitFor,
} from '../fixtures/stack';
import { rawQuery } from '../fixtures/store-sql';
import { startUpstream } from '../fixtures/upstream';

/** The target: a revoke made through a live control is enforced within this, whatever the gateway's own control does. */
const REVOKE_TARGET_MS = 10_000;

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();

t.test('postgres: the gateway leaves a hung control and enforces a revoke made through the other within 10 s', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const databaseUrl = await createDatabase(t);
  const dir = testdirAfterTeardowns(t);
  const dirA = join(dir, 'control-a');
  const dirB = join(dir, 'control-b');
  const env = { ...GENEROUS_LIMITS, SVC_DATABASE_URL: databaseUrl };
  const a = await startControlProcess(t, { dataDir: dirA, env });
  // Registered after the control's own teardown, so it runs first: a stopped control ignores SIGTERM.
  let aStopped = false;
  t.teardown(() => {
    if (aStopped) process.kill(a.pid, 'SIGCONT');
  });
  const up = await startUpstream(t);
  const adminToken = read(dirA, ADMIN_TOKEN_FILE);
  const syncToken = read(dirA, SYNC_TOKEN_FILE);
  const metricsToken = read(dirA, METRICS_TOKEN_FILE);
  t.equal((await adminRequest(a, adminToken, 'POST', '/_admin/v1/endpoints', { id: 'ep', upstream: `${up.url}/base` })).status, 201);
  const issue = async (name: string) =>
    (await adminRequest(a, adminToken, 'POST', '/_admin/v1/keys', { name })).body as { id: string; key: string };
  const keep = await issue('keeps working');
  const doomed = await issue('revoked through the second control');
  t.equal((await adminRequest(a, adminToken, 'PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true })).status, 200);

  mkdirSync(dirB, { recursive: true, mode: 0o700 });
  for (const file of [ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE, METRICS_TOKEN_FILE]) copyFileSync(join(dirA, file), join(dirB, file));
  const b = await startControlProcess(t, { dataDir: dirB, env });
  const [idA, idB] = [dirA, dirB].map((d) => read(d, CONTROL_ID_FILE));

  const gwArgs = ['--data-dir', join(dir, 'gw'), '--host', '127.0.0.1', '--gateway-port', '0', '--id', 'gw-1'];
  const gwArgs2 = ['--data-dir', join(dir, 'gw2'), '--host', '127.0.0.1', '--gateway-port', '0', '--id', 'gw-2'];
  const gw = await spawnService(t, 'gateway', [...gwArgs, '--control', a.url, '--control', b.url], {
    SVC_SYNC_TOKEN: syncToken,
    SVC_METRICS_TOKEN: metricsToken,
  });
  const gwHealth = async () => (await health(gw.url, metricsToken)).body as Record<string, unknown>;
  const setup = (await adminRequest(a, adminToken, 'GET', '/_admin/v1/status')).body.version as number;
  await waitFor(async () => (await gwHealth()).snapshot_version === setup, 'the gateway to apply the setup');
  const attachedTo = async (control: ServiceProcess) =>
    (
      (await adminRequest(control, adminToken, 'GET', '/_admin/v1/status')).body.gateways as { id: string; control_id: string | null }[]
    ).find((g) => g.id === 'gw-1')?.control_id;
  await waitFor(async () => (await attachedTo(b)) === idA, 'the second control to see the gateway on the first');

  const callIds: string[] = [];
  const call = async (key: string) => {
    const res = await request(gw.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${key}` } });
    if (res.status === 200) callIds.push(String(res.headers['x-svc-call-id']));
    return res;
  };
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served before the first control hangs');
  t.equal((await call(doomed.key)).status, 200, 'the doomed key works before the revoke');
  await waitFor(async () => (await gwHealth()).journal_backlog === 0, 'the first outcomes shipped to the first control');

  process.kill(a.pid, 'SIGSTOP');
  aStopped = true;
  const stoppedAt = Date.now();
  // A second gateway starts now, the hung control first on its list (awaited below).
  const starting = spawnService(t, 'gateway', [...gwArgs2, '--control', a.url, '--control', b.url], {
    SVC_SYNC_TOKEN: syncToken,
    SVC_METRICS_TOKEN: metricsToken,
  });

  // Calls while the gateway is still on the hung control: served, and their outcomes journaled
  // (their batch goes to the hung control, which never answers).
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served while its control hangs');

  const revokeAt = Date.now();
  const revoked = await adminRequest(b, adminToken, 'POST', `/_admin/v1/keys/${doomed.id}/revoke`);
  t.equal(revoked.status, 200, revoked.text);
  const committedMs = Date.now() - revokeAt;
  let admitted = 0;
  const refusal = await waitFor(
    async () => {
      const res = await call(doomed.key);
      if (res.status === 200) admitted++;
      return res.status === 200 ? null : res;
    },
    'the gateway to refuse the key revoked through the second control',
    REVOKE_TARGET_MS * 3,
  );
  const refusedMs = Date.now() - revokeAt;
  assertProblem(t, refusal, 403, 'svc_auth_not_in_beta', 'the key revoked through the second control is refused');
  t.comment(`revoke through the live control (committed in ${committedMs} ms) to refusal on the gateway: ${refusedMs} ms`);
  t.comment(`the doomed key was admitted ${admitted} times after its revoke was committed`);
  t.ok(refusedMs < REVOKE_TARGET_MS, `refused within ${REVOKE_TARGET_MS / 1000} s of the revoke (${refusedMs} ms)`);
  t.equal((await gwHealth()).control_url, b.url, 'the gateway is on the second control');
  t.comment(`control stopped to the gateway on the second control: ${Date.now() - stoppedAt} ms or less`);

  // Its acks reach the second control: a wait for the revoke there completes.
  const wait = await adminRequest(b, adminToken, 'POST', '/_admin/v1/sync/wait', { version: revoked.body.version, timeout_ms: 15_000 });
  t.equal(wait.body?.complete, true, `the second control saw the gateway ack the revoke: ${wait.text}`);
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served on the second control');
  await waitFor(async () => (await gwHealth()).journal_backlog === 0, 'every outcome shipped to the second control', 30_000);
  t.comment(`control stopped to every outcome shipped: ${Date.now() - stoppedAt} ms`);

  // A gateway started while the first control of its list hangs: it must not wait on it for good.
  const gw2 = await starting;
  const gw2Health = async () => (await health(gw2.url, metricsToken)).body as Record<string, unknown>;
  await waitFor(
    async () => (await gw2Health()).snapshot_version === revoked.body.version,
    'a gateway started with the hung control first to take the state from the second',
    30_000,
  );
  t.comment(
    `a gateway started with the hung control first on its list held the state from the second ${Date.now() - stoppedAt} ms after it was spawned`,
  );
  t.equal((await gw2Health()).control_url, b.url, 'it is on the second control');
  const res2 = await request(gw2.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${doomed.key}` } });
  assertProblem(t, res2, 403, 'svc_auth_not_in_beta', 'it refuses the revoked key');

  // The first control runs again: it finds the first gateway's stream gone, and leaves it on the second.
  process.kill(a.pid, 'SIGCONT');
  aStopped = false;
  await waitFor(async () => (await attachedTo(a)) === idB, 'the first control to see the gateway on the second');
  t.equal((await gwHealth()).control_url, b.url, 'the gateway stays on the second control');
  t.equal((await gw2Health()).control_url, b.url, 'and so does the second gateway');
  t.equal((await call(keep.key)).status, 200, 'served after the first control is back');
  assertProblem(t, await call(doomed.key), 403, 'svc_auth_not_in_beta', 'the revoked key stays refused');
  await waitFor(async () => (await gwHealth()).journal_backlog === 0, 'the last outcomes shipped');
  const stored = (await rawQuery({ kind: 'postgres', dataDir: dirB, url: databaseUrl }, 'SELECT call_id FROM outcomes')).map((r) =>
    String(r[0]),
  );
  t.same([...stored].sort(), [...callIds].sort(), `each of the ${callIds.length} outcomes stored exactly once`);
});
