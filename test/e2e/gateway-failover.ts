/**
 * A gateway given several controls (`controlUrls`, here as repeated `--control`) with real
 * processes: it starts and serves while the first control on its list is down; and with two
 * controls on one PostgreSQL database, when the control it talks to is killed (SIGKILL) it
 * moves to the other, resumes from the version it holds (a delta, not a full snapshot),
 * enforces a revoke made there, and every outcome of the calls made before and after the kill
 * is stored exactly once.
 */
import t, { type Test } from 'tap';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, CONTROL_ID_FILE, SYNC_TOKEN_FILE } from '../../control/bootstrap';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { parseExposition, sampleValue } from '../fixtures/prometheus';
import {
  adminRequest,
  assertProblem,
  GENEROUS_LIMITS,
  health,
  metrics,
  request,
  type ServiceProcess,
  spawnService,
  startControlProcess,
  testdirAfterTeardowns,
  waitFor,
} from '../fixtures/stack';
import { rawQuery } from '../fixtures/store-sql';
import { startUpstream } from '../fixtures/upstream';

/** A loopback URL nothing listens on: a port the system handed out, then closed. */
async function deadControlUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();

/** `svcctl serve gateway` with one `--control` per URL, in its own data dir, with the controls' tokens in its env. */
function startGateway(
  t: Test,
  opts: { dataDir: string; controls: string[]; syncToken: string; metricsToken: string },
): Promise<ServiceProcess> {
  const args = ['--data-dir', opts.dataDir, '--host', '127.0.0.1', '--gateway-port', '0', '--id', 'gw-1'];
  for (const url of opts.controls) args.push('--control', url);
  return spawnService(t, 'gateway', args, { SVC_SYNC_TOKEN: opts.syncToken, SVC_METRICS_TOKEN: opts.metricsToken });
}

t.test('sqlite: the first control listed is down; the gateway starts and serves from the next', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const dataDir = join(dir, 'data');
  const control = await startControlProcess(t, { dataDir });
  const up = await startUpstream(t);
  const token = read(dataDir, ADMIN_TOKEN_FILE);
  const added = await adminRequest(control, token, 'POST', '/_admin/v1/endpoints', { id: 'ep', upstream: `${up.url}/base` });
  t.equal(added.status, 201, added.text);
  const dead = await deadControlUrl();

  const gw = await startGateway(t, {
    dataDir: join(dir, 'gw'),
    controls: [dead, control.url],
    syncToken: read(dataDir, SYNC_TOKEN_FILE),
    metricsToken: read(dataDir, METRICS_TOKEN_FILE),
  });
  const metricsToken = read(dataDir, METRICS_TOKEN_FILE);
  await waitFor(async () => (await health(gw.url, metricsToken)).status === 200, 'the gateway to hold a snapshot');
  const h = (await health(gw.url, metricsToken)).body;
  t.equal(h.control_url, control.url, '/health names the control it talks to');
  t.equal(h.control_connected, true);
  t.equal((await request(gw.url, '/v1/ep/x', { body: '{}' })).status, 200, 'a call is served');
  const started = gw
    .stderr()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((r) => r.msg === 'gateway listening');
  t.same(started?.control_urls, [dead, control.url], 'the start line lists the controls in order');
  t.match(gw.stderr(), /"msg":"moving to the next control","from":"[^"]+","to":"[^"]+"/, 'the move is logged');
});

t.test('postgres: two controls on one database; the gateway fails over when its control is killed', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const databaseUrl = await createDatabase(t);
  const dir = testdirAfterTeardowns(t);
  const dirA = join(dir, 'control-a');
  const dirB = join(dir, 'control-b');
  const env = { ...GENEROUS_LIMITS, SVC_DATABASE_URL: databaseUrl };
  const a = await startControlProcess(t, { dataDir: dirA, env });
  const up = await startUpstream(t);
  const adminToken = read(dirA, ADMIN_TOKEN_FILE);
  const syncToken = read(dirA, SYNC_TOKEN_FILE);
  const metricsToken = read(dirA, METRICS_TOKEN_FILE);

  t.equal((await adminRequest(a, adminToken, 'POST', '/_admin/v1/endpoints', { id: 'ep', upstream: `${up.url}/base` })).status, 201);
  const issue = async (control: ServiceProcess, name: string) =>
    (await adminRequest(control, adminToken, 'POST', '/_admin/v1/keys', { name })).body as { id: string; key: string };
  const keep = await issue(a, 'keeps working');
  const doomed = await issue(a, 'revoked through the second control');
  t.equal((await adminRequest(a, adminToken, 'PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true })).status, 200);

  // The second control must accept the same tokens: it reads them from its own data dir.
  mkdirSync(dirB, { recursive: true, mode: 0o700 });
  for (const file of [ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE, METRICS_TOKEN_FILE]) copyFileSync(join(dirA, file), join(dirB, file));
  const b = await startControlProcess(t, { dataDir: dirB, env });

  const gw = await startGateway(t, { dataDir: join(dir, 'gw'), controls: [a.url, b.url], syncToken, metricsToken });
  const version = (await adminRequest(a, adminToken, 'GET', '/_admin/v1/status')).body.version as number;
  await waitFor(async () => (await health(gw.url, metricsToken)).body?.snapshot_version === version, 'the gateway to apply the setup');
  t.equal((await health(gw.url, metricsToken)).body.control_url, a.url, 'it talks to the first control');
  const [idA, idB] = [dirA, dirB].map((d) => readFileSync(join(d, CONTROL_ID_FILE), 'utf8').trim());
  const attachedTo = async (control: ServiceProcess) =>
    (
      (await adminRequest(control, adminToken, 'GET', '/_admin/v1/status')).body.gateways as { id: string; control_id: string | null }[]
    ).find((g) => g.id === 'gw-1')?.control_id;
  await waitFor(async () => (await attachedTo(b)) === idA, 'the second control to see the gateway on the first');
  t.equal(await attachedTo(a), idA, 'status through either control shows it attached to the first');

  const callIds: string[] = [];
  const call = async (key: string) => {
    const res = await request(gw.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${key}` } });
    if (res.status === 200) callIds.push(String(res.headers['x-svc-call-id']));
    return res;
  };
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served before the kill');
  t.equal((await call(doomed.key)).status, 200, 'the doomed key still works before the kill');
  await waitFor(
    async () => (await health(gw.url, metricsToken)).body.journal_backlog === 0,
    'the first outcomes shipped to the first control',
  );
  // Made just before the kill: the first control may die before it acks them.
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served just before the kill');
  // A change made through the second control while the gateway is on the first, just before the
  // kill: unless the first control relays it in time (it hears every commit), the gateway
  // reconnects to the second control holding an older version than it, and gets the difference
  // as a delta.
  const late = await issue(b, 'issued through the second control before the kill');

  await a.kill('SIGKILL');

  await waitFor(async () => {
    const gateways = (await adminRequest(b, adminToken, 'GET', '/_admin/v1/gateways')).body?.gateways as { id: string; live: boolean }[];
    return gateways?.some((g) => g.id === 'gw-1' && g.live);
  }, 'the second control to see the gateway live');
  await waitFor(async () => (await health(gw.url, metricsToken)).body.control_connected === true, 'the gateway to report the reconnect');
  t.equal((await health(gw.url, metricsToken)).body.control_url, b.url, '/health names the second control');
  t.equal(await attachedTo(b), idB, 'status shows it attached to the second control now');

  const revoked = await adminRequest(b, adminToken, 'POST', `/_admin/v1/keys/${doomed.id}/revoke`);
  t.equal(revoked.status, 200, revoked.text);
  const wait = await adminRequest(b, adminToken, 'POST', '/_admin/v1/sync/wait', { version: revoked.body.version, timeout_ms: 15_000 });
  t.equal(wait.body?.complete, true, `the gateway applied the revoke: ${wait.text}`);
  assertProblem(t, await call(doomed.key), 403, 'svc_auth_not_in_beta', 'the key revoked through the second control');
  t.equal((await call(late.key)).status, 200, 'the key issued through the second control before the kill');
  for (let i = 0; i < 3; i++) t.equal((await call(keep.key)).status, 200, 'served after the kill');
  await waitFor(async () => (await health(gw.url, metricsToken)).body.journal_backlog === 0, 'every outcome shipped');

  const families = parseExposition((await metrics(gw.url, metricsToken)).text);
  t.equal(sampleValue(families, 'svc_gateway_sync_updates_total', { kind: 'snapshot' }), 1, 'one full snapshot: the first');
  t.ok(sampleValue(families, 'svc_gateway_sync_updates_total', { kind: 'delta' }) >= 2, 'the resume and the revoke came as deltas');
  t.equal(sampleValue(families, 'svc_gateway_control_moves_total'), 1, 'one move');
  // The gateway resumes with what it held when the first control died: the setup's version, or
  // the change made through the second control if the first relayed it before the kill (on one
  // PostgreSQL database every control hears every commit).
  const held = Number(/"msg":"gateway connected","gateway_id":"gw-1","held_version":(\d+),/.exec(b.stderr())?.[1]);
  t.ok(held === version || held === version + 1, `it resumed with the version it held (${held}; the setup's is ${version})`);
  t.notMatch(b.stderr(), /"msg":"snapshot sent"/, 'the second control sent no full snapshot');
  t.match(gw.stderr(), JSON.stringify({ msg: 'moving to the next control', from: a.url, to: b.url }).slice(1, -1), 'the move is logged');

  const rows = await rawQuery({ kind: 'postgres', dataDir: dirB, url: databaseUrl }, 'SELECT call_id FROM outcomes');
  const stored = rows.map((row) => String(row[0]));
  t.equal(callIds.length, 11, 'eleven calls were served');
  t.same([...stored].sort(), [...callIds].sort(), 'each outcome stored exactly once');
});
