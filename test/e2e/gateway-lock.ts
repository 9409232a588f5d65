/**
 * One gateway process per id and data dir, with a lock the kernel releases when the holder
 * dies (runtime/instance-lock.ts), through real processes: a second gateway with the same id
 * is refused with "already running (pid N)" while the first lives; right after a SIGKILL the
 * gateway starts again; a pid file left by earlier versions naming a live, unrelated process
 * (here: this test's own pid, as after pid reuse) does not block; and neither does a holder
 * that is a zombie (killed, never reaped by its parent).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CLI_PATH, childEnv, gatewayArgs, health, startStack, svcctl, waitFor } from '../fixtures/stack';

/** The state letter of `pid` in /proc (`Z` for a zombie), or null when it is gone. */
function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

t.test('gateway single-instance lock', async (t) => {
  const stack = await startStack(t);
  const dir = join(stack.dataDir, 'gateway-gw-1');
  const args = ['serve', 'gateway', ...gatewayArgs({ dataDir: stack.dataDir, controlUrl: stack.control.url, id: 'gw-1' })];

  await t.test('a second gateway with the same id and data dir is refused while the first runs', async (t) => {
    const second = await svcctl(args);
    t.equal(second.code, 1, 'exit 1');
    t.match(second.stderr, `gateway gw-1 is already running (pid ${stack.gateways[0]!.pid}); give this one another id with SVC_GATEWAY_ID`);
    t.equal((await health(stack.gateway)).status, 200, 'the first one is unharmed');
  });

  await t.test('right after a SIGKILL the gateway starts again', async (t) => {
    const killed = await stack.killGateway();
    t.equal(killed.signal, 'SIGKILL');
    const again = await stack.restartGateway(0);
    t.match((await health(again.url)).body, { status: 'ok', gateway_id: 'gw-1' }, 'ready');
  });

  await t.test('a legacy pid file naming a live unrelated process (pid reuse) does not block', async (t) => {
    await stack.gateways[0]!.stop();
    writeFileSync(join(dir, 'lock'), String(process.pid));
    const again = await stack.restartGateway(0);
    t.match((await health(again.url)).body, { status: 'ok', gateway_id: 'gw-1' }, 'ready');
    t.notOk(existsSync(join(dir, 'lock')), 'the pid file is removed');
  });

  await t.test('a zombie holder does not block', { skip: process.platform !== 'linux' && 'needs /proc' }, async (t) => {
    await stack.gateways[0]!.stop();
    rmSync(join(dir, 'lock'), { force: true }); // independent of the case above
    // sh starts the gateway in the background, prints its pid and becomes `sleep`, which never
    // reaps it: once killed, the gateway stays a zombie with its pid still taken.
    const parent = spawn('/bin/sh', ['-c', '"$0" "$@" & echo "gateway-pid $!"; exec sleep 600', process.execPath, CLI_PATH, ...args], {
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const parentExited = new Promise<void>((resolve) => parent.once('exit', () => resolve()));
    let zombiePid = 0;
    t.teardown(async () => {
      if (zombiePid > 0 && procState(zombiePid) !== null && procState(zombiePid) !== 'Z') process.kill(zombiePid, 'SIGKILL');
      if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
      await parentExited;
    });
    let url = '';
    const lines = createInterface({ input: parent.stdout });
    lines.on('line', (line) => {
      const pid = /^gateway-pid (\d+)$/.exec(line);
      if (pid) zombiePid = Number(pid[1]);
      const market = /gateway \(\{market_url\}\)\s+(http:\/\/\S+)/.exec(line);
      if (market) url = market[1]!;
    });
    await waitFor(() => zombiePid > 0 && url !== '', 'the backgrounded gateway to print its pid and URL');
    await waitFor(async () => (await health(url, stack.metricsToken())).status === 200, 'the backgrounded gateway to be ready');

    process.kill(zombiePid, 'SIGKILL');
    await waitFor(() => procState(zombiePid) === 'Z', `pid ${zombiePid} to be a zombie`);
    t.equal(procState(zombiePid), 'Z', 'the killed gateway is a zombie: its pid is still taken');

    const again = await stack.restartGateway(0);
    t.match((await health(again.url)).body, { status: 'ok', gateway_id: 'gw-1' }, 'a new gateway with the same id starts');
    t.equal(procState(zombiePid), 'Z', 'while the zombie is still there');
  });
});
