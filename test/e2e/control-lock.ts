/**
 * One control process per data dir (runtime/instance-lock.ts, `control.sock`), through real
 * processes: a second `svcctl serve control` on the data dir of a running control exits 1 naming
 * the holder, `svcctl up` says the same before it starts anything, the running control is
 * unharmed, and right after control is SIGKILLed (a socket file left behind, unless the data
 * dir's path is long enough for the abstract namespace) it starts again.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { lockAddress, probe } from '../../runtime/instance-lock';
import { controlListenArgs, startStack, svcctl } from '../fixtures/stack';

t.test('control single-instance lock', async (t) => {
  const stack = await startStack(t, { gateways: 0 });
  const refusal = () => `svcctl: control already running for this data dir (pid ${stack.control.pid})`;

  await t.test('a second serve control on the same data dir exits 1 naming the running one', async (t) => {
    const second = await svcctl(['serve', 'control', '--data-dir', stack.dataDir, ...controlListenArgs()]);
    t.equal(second.code, 1, 'exit 1');
    t.equal(second.stderr.trim(), refusal());
    t.equal(second.stdout, '', 'it never said it was ready');
    const status = await stack.cli(['status', '--json']);
    t.equal(status.code, 0, 'the first control still answers');
  });

  await t.test('svcctl up on that data dir says the same and starts nothing', async (t) => {
    const up = await svcctl(['up', '--data-dir', stack.dataDir, ...controlListenArgs(), '--gateway-port', '0']);
    t.equal(up.code, 1, 'exit 1');
    t.equal(up.stderr.trim(), refusal());
    t.equal(up.stdout, '', 'no start banner, no child output');
  });

  await t.test('a SIGKILLed control leaves its socket file, which does not block a restart', async (t) => {
    const killed = await stack.killControl();
    t.equal(killed.signal, 'SIGKILL');
    const address = lockAddress(stack.dataDir, { role: 'control' });
    // A long data dir path takes Linux's abstract namespace, which leaves no file behind.
    if (address.kind === 'file') t.ok(existsSync(address.path), 'the dead holder’s socket file is still there');
    t.equal(await probe(address.path), 'stale', 'and nobody answers on it');
    const again = await stack.restartControl();
    t.ok(again.running(), 'control runs again');
    const second = await svcctl(['serve', 'control', '--data-dir', stack.dataDir, ...controlListenArgs()]);
    t.equal(second.stderr.trim(), `svcctl: control already running for this data dir (pid ${again.pid})`, 'and holds the lock');
  });
});
