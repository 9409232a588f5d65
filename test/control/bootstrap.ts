/**
 * First start bootstraps the data dir (docs/design.md §2): the directory 0700, admin, sync and metrics
 * tokens 0600; later starts reuse them, tighten loose permissions, refuse a truncated token
 * file, and a configured SVC_ADMIN_TOKEN (or SVC_METRICS_TOKEN) replaces the file.
 */
import t from 'tap';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlStartError } from '../../control/server';
import { runCli } from '../fixtures/cli';
import { captureLogs, startTestControl } from '../fixtures/control';

const mode = (path: string) => statSync(path).mode & 0o777;

t.test('first start creates the data dir and the tokens; later starts reuse them', async (t) => {
  const dataDir = join(t.testdir(), 'a', 'data');
  const first = await startTestControl(t, { dataDir });
  t.equal(mode(dataDir), 0o700, 'data dir 0700');
  for (const [file, token] of [
    ['admin.token', first.adminToken],
    ['sync.token', first.syncToken],
    ['metrics.token', first.handle.bootstrap.metricsToken.token!],
  ] as const) {
    const path = join(dataDir, file);
    t.equal(mode(path), 0o600, `${file} 0600`);
    t.equal(readFileSync(path, 'utf8').trim(), token, `${file} holds the token in use`);
    t.ok(token.length >= 32, `${file}: at least 32 characters`);
  }
  t.match(first.adminToken, /^svc_admin_/);
  t.match(first.syncToken, /^svc_sync_/);
  t.match(first.handle.bootstrap.metricsToken.token, /^svc_metrics_/);
  t.equal(first.handle.bootstrap.metricsToken.created, true);
  t.not(first.adminToken, first.syncToken);
  t.equal(first.handle.bootstrap.adminToken.created, true);
  t.ok(existsSync(join(dataDir, 'control.db')), 'database created');
  await first.close();

  const second = await startTestControl(t, { dataDir });
  t.equal(second.adminToken, first.adminToken, 'same admin token');
  t.equal(second.syncToken, first.syncToken, 'same sync token');
  t.equal(second.handle.bootstrap.adminToken.created, false, 'not created again');
  const res = await second.admin('GET', '/_admin/v1/status');
  t.equal(res.status, 200, 'the reused token works');
});

t.test('a control id is made once, kept in the data dir, logged at start-up and shown in status', async (t) => {
  const root = t.testdir();
  const dataDir = join(root, 'data');
  const logs = captureLogs();
  const first = await startTestControl(t, { dataDir, log: logs.log });
  const path = join(dataDir, 'control-id');
  const id = readFileSync(path, 'utf8').trim();
  t.match(id, /^ctl_[1-9A-HJ-NP-Za-km-z]{12}$/, 'ctl_ and 12 base58 characters');
  t.equal(mode(path), 0o600, 'control-id 0600');
  t.equal(first.handle.ctx.controlId, id);
  const ready = logs.records().find((r) => r.msg === 'control ready');
  t.equal(ready?.control_id, id, 'the start-up line names it');
  t.equal((await first.admin('GET', '/_admin/v1/status')).body.control_id, id, '/_admin/v1/status shows it');
  const json = await runCli(['status', '--json'], { control: first });
  t.equal(json.json().control_id, id, 'svcctl status --json shows it');
  const human = await runCli(['status'], { control: first });
  t.match(human.stdout, new RegExp(`^control .*\\(${id}, up since`, 'm'), 'svcctl status shows it');
  await first.close();

  const second = await startTestControl(t, { dataDir });
  t.equal(second.handle.ctx.controlId, id, 'the same id after a restart');
  await second.close();

  const other = await startTestControl(t, { dataDir: join(root, 'b', 'data') });
  t.not(other.handle.ctx.controlId, id, 'another data dir, another id');
});

t.test('a control-id file that holds no control id stops start-up with a clear message', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir });
  await first.close();
  writeFileSync(join(dataDir, 'control-id'), 'not-an-id\n');
  await t.rejects(startTestControl(t, { dataDir }), { message: /control-id does not hold a control id.*delete it/ });
});

t.test('a token file readable by others is tightened to 0600', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir });
  await first.close();
  chmodSync(join(dataDir, 'admin.token'), 0o644);
  await startTestControl(t, { dataDir });
  t.equal(mode(join(dataDir, 'admin.token')), 0o600);
});

t.test('a truncated token file stops start-up with a clear message', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir });
  await first.close();
  writeFileSync(join(dataDir, 'admin.token'), 'short\n');
  await t.rejects(startTestControl(t, { dataDir }), { message: /admin\.token.*fewer than 32/ });
});

t.test('SVC_ADMIN_TOKEN replaces the token file', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const token = 'operator-chosen-token-0123456789-abcdef';
  const logs = captureLogs();
  const control = await startTestControl(t, { dataDir, env: { SVC_ADMIN_TOKEN: token }, log: logs.log });
  t.equal(control.adminToken, token);
  t.equal(control.handle.bootstrap.adminToken.file, null);
  t.notOk(existsSync(join(dataDir, 'admin.token')), 'no admin.token is written');
  t.ok(existsSync(join(dataDir, 'sync.token')), 'the sync token is still bootstrapped');

  const ok = await control.admin('POST', '/_admin/v1/changelog', { text: 'hello' });
  t.equal(ok.status, 201, 'the configured token is accepted');
  t.equal(ok.body.author, 'root', 'made by root');
  const audit = await control.admin('GET', '/_admin/v1/audit?action=changelog.add');
  t.equal(audit.body.entries[0]?.token_id, 'root-env', 'with the token from the environment, as the audit log says');
  t.match(logs.text(), 'control ready', 'start-up was logged');
  t.notOk(logs.text().includes(token), 'the token is not logged');
});

t.test('SVC_METRICS_TOKEN replaces metrics.token; control /metrics takes only that token', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const token = 'operator-chosen-metrics-token-0123456789';
  const control = await startTestControl(t, { dataDir, env: { SVC_METRICS_TOKEN: token } });
  t.equal(control.handle.bootstrap.metricsToken.file, null);
  t.notOk(existsSync(join(dataDir, 'metrics.token')), 'no metrics.token is written');
  const metrics = (auth: string | null) =>
    control.request(`${control.urls.control}/metrics`, { headers: auth === null ? {} : { authorization: `Bearer ${auth}` } });
  const ok = await metrics(token);
  t.equal(ok.status, 200, 'the configured token is accepted');
  t.match(ok.text, /^svc_control_state_version \d+$/m);
  for (const [what, auth] of [
    ['no token', null],
    ['the admin token', control.adminToken],
    ['the sync token', control.syncToken],
  ] as const) {
    const res = await metrics(auth);
    t.equal(res.status, 401, `${what}: 401`);
    t.equal((res.body as { code?: string } | null)?.code, 'svc_unauthorized', `${what}: svc_unauthorized`);
  }
});

t.test('a second control on a data dir in use is refused before it opens the store; the lock goes with close', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const first = await startTestControl(t, { dataDir });
  const refused = await startTestControl(t, { dataDir }).catch((err: unknown) => err);
  t.ok(refused instanceof ControlStartError, 'ControlStartError');
  t.equal((refused as Error).message, `control already running for this data dir (pid ${process.pid})`);
  t.equal((await first.admin('GET', '/_admin/v1/status')).status, 200, 'the first one is unharmed');
  await first.close();
  const second = await startTestControl(t, { dataDir });
  t.equal((await second.admin('GET', '/_admin/v1/status')).status, 200, 'once it closed, another control starts');
});
