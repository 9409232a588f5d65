/**
 * `svcctl up --database-url`: up hands the URL to the control it starts (over SVC_DATABASE_URL,
 * as a flag wins over env), in the child's environment so the password shows in no command
 * line and no message; an empty `--database-url` keeps control on SQLite whatever the env says.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnCli } from '../fixtures/cli';
import {
  childEnv,
  CLI_PATH,
  controlListenArgs,
  request,
  STOP_GRACE_MS,
  testdirAfterTeardowns,
  WAIT_LIMIT_MS,
  waitFor,
} from '../fixtures/stack';

const PASSWORD = 'Hunter2-9f3k';
const PORTS = [...controlListenArgs(), '--gateway-port', '0'];

t.test('up passes --database-url to control, over the env, and never prints the password', async (t) => {
  const dir = testdirAfterTeardowns(t);
  const dataDir = join(dir, 'data');
  const res = await spawnCli(['up', '--data-dir', dataDir, ...PORTS, '--database-url', `postgres://svc:${PASSWORD}@127.0.0.1:1/svc`], {
    env: { SVC_DATABASE_URL: 'postgres://other@127.0.0.1:1/other' },
    cwd: dir,
  });
  t.equal(res.code, 1, `up exits 1: nothing listens on that store's port (stderr: ${res.stderr.replace(PASSWORD, '***')})`);
  t.match(
    res.stdout + res.stderr,
    'PostgreSQL store at postgres://svc:***@127.0.0.1:1/svc: connect ECONNREFUSED',
    "control got the flag's URL",
  );
  t.match(res.stderr, /serve control .*exited \(code 1\) before it was ready/, 'up names the role that failed');
  t.notMatch(res.stdout + res.stderr, PASSWORD, 'the password is in no line up or its children printed');
  t.notOk(existsSync(join(dataDir, 'control.db')), 'no SQLite database instead');
});

t.test('up --database-url "" keeps control on SQLite over SVC_DATABASE_URL', async (t) => {
  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const child = spawn(process.execPath, [CLI_PATH, 'up', '--json', '--data-dir', dataDir, ...PORTS, '--database-url', ''], {
    env: childEnv({ SVC_DATABASE_URL: `postgres://svc:${PASSWORD}@127.0.0.1:1/svc` }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, signal) => r({ code, signal })),
  );
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS * 3);
    await exited;
    clearTimeout(timer);
  });

  await waitFor(() => stdout.includes('\n') || child.exitCode !== null, 'the ready object', WAIT_LIMIT_MS * 2);
  t.equal(child.exitCode, null, `up is running (stderr: ${stderr.replace(PASSWORD, '***')})`);
  const ready = JSON.parse(stdout.trim());
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const status = await request(ready.urls.control, '/_admin/v1/status', { method: 'GET', headers: { authorization: `Bearer ${token}` } });
  t.equal(status.status, 200);
  t.match(status.body.store, { kind: 'sqlite', path: join(dataDir, 'control.db') }, 'control runs on SQLite in the data dir');

  child.kill('SIGTERM');
  t.equal((await exited).code, 0, 'up stops cleanly');
  t.notMatch(stdout + stderr, PASSWORD, 'the password is printed nowhere');
});
