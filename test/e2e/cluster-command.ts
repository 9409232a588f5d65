/**
 * `npm run cluster` (its built entry, `dist/demo/cluster.js --json`): a throwaway PostgreSQL,
 * two controls on its database and three gateways spread over them. Both controls accept the
 * admin token it names; every gateway holds a snapshot, the second one from control B; a key
 * issued through control A works on the gateway attached to B, and a revoke made through B is
 * enforced by a gateway attached to A. SIGINT stops every process it started and removes its
 * directories; so does the death of one of them (exit 1). Without PostgreSQL it says how to
 * install it and exits 1.
 */
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { skipWithoutPostgres } from '../fixtures/postgres';
import { assertProblem, childEnv, health, request, waitFor, type HttpResult } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

const CLUSTER = resolve(__dirname, '..', '..', 'dist', 'demo', 'cluster.js');

interface Ready {
  status: 'ready';
  work_dir: string;
  postgres_dir: string;
  database_url: string;
  controls: { name: string; data_dir: string; admin_token_file: string; urls: { control: string; api: string; indexer: string } }[];
  gateways: { id: string; url: string; controls: string[] }[];
  admin_tokens: Record<string, string>;
  pids: Record<string, number>;
}

interface Running {
  child: ChildProcess;
  ready: Ready;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** Start the command and wait for its ready object; killed (SIGKILL) in teardown if still running. */
async function startCommand(t: Test): Promise<Running> {
  t.ok(existsSync(CLUSTER), 'the command is built (npm run build)');
  const child = spawn(process.execPath, [CLUSTER, '--json'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const ready = await new Promise<Ready>((resolvePromise, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout += `${line}\n`;
      if (line.startsWith('{')) resolvePromise(JSON.parse(line) as Ready);
    });
    void exit.then((code) => reject(new Error(`the command exited (${code}) before it was ready: ${stderr}`)));
  });
  return { child, ready, stdout: () => stdout, stderr: () => stderr, exit };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every process the command started is gone and its directories are removed. */
async function assertAllGone(t: Test, ready: Ready): Promise<void> {
  t.same(
    Object.keys(ready.pids).sort(),
    ['control-a', 'control-b', 'gateway-1', 'gateway-2', 'gateway-3', 'postgres'],
    'the pids of all six',
  );
  // A process that exited is reaped by its parent (or by init once the command itself exited).
  await waitFor(() => Object.values(ready.pids).every((pid) => !alive(pid)), 'every process to be gone');
  for (const [name, pid] of Object.entries(ready.pids)) t.notOk(alive(pid), `${name} is gone`);
  t.notOk(existsSync(ready.work_dir), 'the work dir is removed');
  await waitFor(() => !existsSync(ready.postgres_dir), "PostgreSQL's directory to be removed");
}

t.test('npm run cluster: two controls on one database, three gateways; SIGINT stops them all', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const { child, ready, exit } = await startCommand(t);
  t.equal(ready.controls.length, 2, 'two controls');
  t.same(
    ready.gateways.map((g) => g.controls),
    [
      ['A', 'B'],
      ['B', 'A'],
      ['A', 'B'],
    ],
    'the gateways are spread over both controls',
  );
  const [a, b] = ready.controls as [Ready['controls'][number], Ready['controls'][number]];
  const token = readFileSync(ready.admin_tokens['control-a']!, 'utf8').trim();
  t.equal(readFileSync(ready.admin_tokens['control-b']!, 'utf8').trim(), token, "control B's token file holds the same token");
  const metricsToken = readFileSync(join(a.data_dir, METRICS_TOKEN_FILE), 'utf8').trim();
  const admin = (url: string, method: string, path: string, body?: unknown): Promise<HttpResult> =>
    request(url, path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });

  for (const c of ready.controls) {
    const status = await admin(c.urls.control, 'GET', '/_admin/v1/status');
    t.equal(status.status, 200, `control ${c.name} accepts the admin token it printed`);
    t.equal((await request(c.urls.api, '/health', { method: 'GET' })).status, 200, `control ${c.name}'s public api answers`);
    t.equal((await request(c.urls.indexer, '/api/stats', { method: 'GET' })).status, 200, `control ${c.name}'s indexer answers`);
  }
  for (const g of ready.gateways) t.equal((await health(g.url, metricsToken)).status, 200, `${g.id} holds a snapshot`);
  const [gw1, gw2] = ready.gateways as [Ready['gateways'][number], Ready['gateways'][number]];
  t.equal((await health(gw2.url, metricsToken)).body.control_url, b.urls.control, 'gateway 2 talks to control B');
  t.equal((await health(gw1.url, metricsToken)).body.control_url, a.urls.control, 'gateway 1 talks to control A');

  // A key issued through A is accepted by the gateway on B's side. A control pushes the versions
  // it commits; a change made through B then carries A's earlier one to B's gateways with it.
  const up = await startUpstream(t);
  t.equal(
    (await admin(a.urls.control, 'POST', '/_admin/v1/endpoints', { id: 'ep', upstream: `${up.url}/base` })).status,
    201,
    'an endpoint, through A',
  );
  t.equal(
    (await admin(a.urls.control, 'PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true })).status,
    200,
    'the beta gate on, through A',
  );
  const issue = async (url: string, name: string) =>
    (await admin(url, 'POST', '/_admin/v1/keys', { name })).body as { id: string; key: string; version: number };
  const throughA = await issue(a.urls.control, 'through A');
  const throughB = await issue(b.urls.control, 'through B');
  t.ok(throughB.version > throughA.version, 'one sequence of versions over both controls');
  const applied = async (url: string, version: number) => ((await health(url, metricsToken)).body?.snapshot_version ?? 0) >= version;
  await waitFor(() => applied(gw2.url, throughB.version), 'gateway 2 to apply the keys');
  const call = (url: string, key?: string) =>
    request(url, '/v1/ep/x', { body: '{}', headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
  t.equal((await call(gw2.url, throughA.key)).status, 200, 'the key issued through A is accepted on the gateway attached to B');
  t.equal((await call(gw2.url, throughB.key)).status, 200, 'and the key issued through B');
  assertProblem(t, await call(gw2.url), 403, 'svc_auth_not_in_beta', 'no key: refused with the gate on');

  // And a revoke made through B is enforced on a gateway attached to A.
  const revoked = await admin(b.urls.control, 'POST', `/_admin/v1/keys/${throughA.id}/revoke`);
  t.equal(revoked.status, 200, 'the key issued through A revoked through B');
  const later = await issue(a.urls.control, 'through A, after the revoke');
  await waitFor(() => applied(gw1.url, later.version), 'gateway 1 to apply the revoke');
  assertProblem(t, await call(gw1.url, throughA.key), 403, 'svc_auth_not_in_beta', 'the key revoked through B, on the gateway of A');
  t.equal((await call(gw1.url, throughB.key)).status, 200, 'the key issued through B, on the gateway of A');

  child.kill('SIGINT');
  t.equal(await exit, 0, 'exits 0 on SIGINT');
  await assertAllGone(t, ready);
});

t.test('npm run cluster: when one process dies, the rest are stopped and it exits 1', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const { ready, exit, stderr } = await startCommand(t);
  process.kill(ready.pids['gateway-2']!, 'SIGKILL');
  t.equal(await exit, 1, 'exits 1');
  t.match(stderr(), /gateway-2 exited \(SIGKILL\)/, 'says which process died');
  t.match(stderr(), /stopping the rest/);
  await assertAllGone(t, ready);
});

t.test('npm run cluster without PostgreSQL says how to install it and exits 1', async (t) => {
  t.ok(existsSync(CLUSTER), 'the command is built (npm run build)');
  const child = spawn(process.execPath, [CLUSTER], {
    env: childEnv({ SVC_TEST_PG_BINDIR: '/nonexistent' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  child.stdout.resume();
  t.equal(await new Promise((r) => child.once('exit', r)), 1, 'exits 1');
  t.match(stderr, /needs PostgreSQL: .*initdb and postgres are not in SVC_TEST_PG_BINDIR=\/nonexistent/);
  t.match(stderr, 'apt-get install -y postgresql', 'says how to install it');
});
