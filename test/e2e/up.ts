/**
 * `svcctl up` as a real process (docs/design.md §2): it starts control and a gateway as two separate
 * processes, prints the four URLs once both are ready, and on SIGTERM stops both and exits 0.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { controlListenArgs, health, metricsToken, request, testdirAfterTeardowns, WAIT_LIMIT_MS, waitFor } from '../fixtures/stack';
import { startUp } from '../fixtures/cli';
import { lockAddress, probe } from '../../runtime/instance-lock';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('svcctl up: four URLs, a ready gateway, and a clean stop on SIGTERM', async (t) => {
  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const up = startUp(t, ['--data-dir', dataDir, ...controlListenArgs(), '--gateway-port', '0']);
  const { child, exited } = up;
  const rolePids: number[] = [];
  // After up's own stop (startUp's teardown): any role it left behind.
  t.teardown(() => {
    for (const pid of rolePids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  await waitFor(() => /Press Ctrl-C to stop\./.test(up.stdout()) || child.exitCode !== null, '`up` to print its URLs', WAIT_LIMIT_MS * 2);
  t.equal(child.exitCode, null, `up is running (stderr: ${up.stderr()})`);
  const url = (label: RegExp) => new RegExp(`^\\s*${label.source}\\s+(http://127\\.0\\.0\\.1:\\d+)\\s*$`, 'm').exec(up.stdout())?.[1];
  const urls = {
    gateway: url(/gateway \(\{market_url\}\)/),
    api: url(/public api \(\{api_url\}\)/),
    indexer: url(/indexer \(\{indexer_url\}\)/),
    control: url(/control admin \+ sync/),
  };
  for (const [name, value] of Object.entries(urls)) t.ok(value, `${name} URL printed`);
  t.equal(new Set(Object.values(urls)).size, 4, 'four distinct URLs');

  const gatewayHealth = await waitFor(async () => {
    const res = await health(urls.gateway!, metricsToken(dataDir));
    return res.status === 200 ? res : null;
  }, 'the gateway to be ready');
  t.match(gatewayHealth.body, { status: 'ok', ready: true, control_connected: true }, 'the gateway answers /health ready');
  for (const name of ['api', 'indexer'] as const) {
    const res = await request(urls[name]!, '/health', { method: 'GET', headers: { 'user-agent': 'Mozilla/5.0' } });
    t.equal(res.text, '{"status":"ok","version":"v1"}', `${name} /health`);
  }
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const status = await request(urls.control!, '/_admin/v1/status', { method: 'GET', headers: { authorization: `Bearer ${token}` } });
  t.equal(status.status, 200, 'control answers its admin API');
  t.equal(status.body.gateways.length, 1, 'with the gateway connected to it');

  // The two roles are separate processes: control publishes its pid, the gateway's lock answers with its own.
  const controlPid = JSON.parse(readFileSync(join(dataDir, 'control.json'), 'utf8')).pid as number;
  const lockDir = readdirSync(dataDir).find((name) => name.startsWith('gateway-'));
  const holder = await probe(lockAddress(join(dataDir, lockDir!)).path);
  const gatewayPid = holder === 'stale' ? 0 : (holder.pid ?? 0);
  t.ok(gatewayPid > 0, 'the gateway’s lock answers with its pid');
  rolePids.push(controlPid, gatewayPid);
  t.not(controlPid, child.pid, 'control is its own process');
  t.not(gatewayPid, child.pid, 'so is the gateway');
  t.not(controlPid, gatewayPid);
  t.ok(alive(controlPid) && alive(gatewayPid), 'both running');

  child.kill('SIGTERM');
  const exit = await exited;
  t.same(exit, { code: 0, signal: null }, `up exits 0 on SIGTERM (stderr: ${up.stderr().slice(-500)})`);
  t.notOk(alive(controlPid), 'control has exited');
  t.notOk(alive(gatewayPid), 'the gateway has exited');
  t.match(up.stdout(), /svc stopped\./);
});
