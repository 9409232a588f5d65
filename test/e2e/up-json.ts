/**
 * `svcctl up --json` and `svcctl serve <role> --json`, for scripts: once ready, stdout carries
 * exactly one JSON object with the listeners' URLs (and pids), nothing else, and the
 * processes keep running until SIGTERM.
 */
import t, { type Test } from 'tap';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import {
  childEnv,
  CLI_PATH,
  controlListenArgs,
  gatewayArgs,
  health,
  metricsToken,
  request,
  STOP_GRACE_MS,
  testdirAfterTeardowns,
  WAIT_LIMIT_MS,
  waitFor,
} from '../fixtures/stack';
import { SDK_UA } from '../fixtures/public';

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(t: Test, args: string[]): Running {
  const child = spawn(process.execPath, [CLI_PATH, ...args], { env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
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
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

const PORTS = [...controlListenArgs(), '--gateway-port', '0'];

t.test('svcctl up --json --engine undici prints one ready object, keeps running, and stops on SIGTERM', async (t) => {
  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const up = start(t, ['up', '--json', '--engine', 'undici', '--data-dir', dataDir, ...PORTS]);
  await waitFor(() => up.stdout().includes('\n') || up.child.exitCode !== null, 'the ready object', WAIT_LIMIT_MS * 2);
  t.equal(up.child.exitCode, null, `up is running (stderr: ${up.stderr()})`);
  const ready = JSON.parse(up.stdout().trim());
  t.equal(ready.status, 'ready');
  t.same(Object.keys(ready.urls).sort(), ['api', 'control', 'gateway', 'indexer']);
  for (const url of Object.values<string>(ready.urls)) t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.same(Object.keys(ready.pids).sort(), ['control', 'gateway']);
  t.ok(Number.isInteger(ready.pids.control) && Number.isInteger(ready.pids.gateway));

  const api = await request(ready.urls.api, '/health', { method: 'GET', headers: { 'user-agent': SDK_UA } });
  t.same(api.body, { status: 'ok', version: 'v1' }, 'the printed api URL serves');
  // The gateway listens before its first state arrives (its /health says not_ready until then).
  let gw = await request(ready.urls.gateway, '/health', { method: 'GET' });
  await waitFor(
    async () => (gw = await request(ready.urls.gateway, '/health', { method: 'GET' })).status === 200,
    'the gateway ready',
    WAIT_LIMIT_MS,
  );
  t.equal(gw.status, 200, 'the printed gateway URL serves');
  t.equal((await health(ready.urls.gateway, metricsToken(dataDir))).body.engine, 'undici', 'up passed --engine to its gateway');

  up.child.kill('SIGTERM');
  const exit = await up.exited;
  t.equal(exit.code, 0);
  t.equal(up.stdout().trim().split('\n').length, 1, `stdout held only the ready object: ${up.stdout()}`);
});

t.test('svcctl serve control --json and serve gateway --json each print one ready object', async (t) => {
  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const control = start(t, ['serve', 'control', '--json', '--data-dir', dataDir, ...controlListenArgs()]);
  await waitFor(() => control.stdout().includes('\n') || control.child.exitCode !== null, 'control ready');
  const c = JSON.parse(control.stdout().trim());
  t.match(c, { status: 'ready', role: 'control', pid: control.child.pid });
  t.same(Object.keys(c.urls).sort(), ['api', 'control', 'indexer']);

  const gateway = start(t, ['serve', 'gateway', '--json', ...gatewayArgs({ dataDir, controlUrl: c.urls.control, id: 'gw-json' })]);
  await waitFor(() => gateway.stdout().includes('\n') || gateway.child.exitCode !== null, 'gateway ready');
  const g = JSON.parse(gateway.stdout().trim());
  t.match(g, { status: 'ready', role: 'gateway', pid: gateway.child.pid });
  t.match(g.urls.gateway, /^http:\/\/127\.0\.0\.1:\d+$/);
  const answered = await waitFor(
    async () => ((await request(g.urls.gateway, '/health', { method: 'GET' })).status === 200 ? true : null),
    'the gateway ready at the printed URL',
  );
  t.ok(answered);

  for (const p of [gateway, control]) {
    p.child.kill('SIGTERM');
    t.equal((await p.exited).code, 0);
    t.equal(p.stdout().trim().split('\n').length, 1, 'one line on stdout');
  }
});
