/**
 * The single-instance lock (runtime/instance-lock.ts) of a gateway dir and of control's data
 * dir, in both of its address forms (a socket file in the dir, and Linux's abstract
 * namespace): a live holder refuses
 * a second taker and says its pid; a holder that was SIGKILLed leaves nothing that blocks; a
 * pid file from earlier versions naming a live process does not matter and is removed; the
 * socket file is 0600.
 */
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CONTROL_LOCK_SOCKET_FILE,
  InstanceLockedError,
  LEGACY_PID_FILE,
  acquireInstanceLock,
  lockAddress,
  probe,
} from '../../runtime/instance-lock';

/**
 * A separate process that listens on `path` the way a lock holder does (answers its pid), and
 * says `listening` when it does. Plain Node: it stands for a gateway that holds the lock.
 */
async function holder(t: Test, path: string): Promise<ChildProcess> {
  const script = `
    const net = require('node:net');
    const path = Buffer.from(process.argv[1], 'hex').toString();
    net.createServer((s) => s.end(process.pid + '\\n')).listen(path, () => console.log('listening'));
  `;
  // Hex: an abstract address starts with NUL, which an argument cannot carry.
  const child = spawn(process.execPath, ['-e', script, Buffer.from(path).toString('hex')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (s: string) => s.includes('listening') && resolve());
    child.once('exit', (code, signal) => reject(new Error(`holder exited (${signal ?? code})`)));
  });
  return child;
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/**
 * A short dir under the system temp dir: tap's test dirs are too long for a socket address
 * (they would take the abstract form).
 */
function shortDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const forms = process.platform === 'linux' ? (['file', 'abstract'] as const) : (['file'] as const);

for (const form of forms) {
  t.test(`${form} address`, async (t) => {
    await t.test('a live holder refuses a second taker and says its pid', async (t) => {
      const dir = shortDir(t);
      const address = lockAddress(dir, { prefer: form });
      t.equal(address.kind, form);
      const live = await holder(t, address.path);
      const err = await acquireInstanceLock(dir, { prefer: form }).catch((e: unknown) => e);
      t.ok(err instanceof InstanceLockedError, 'refused');
      t.equal((err as InstanceLockedError).pid, live.pid, 'naming the holder’s pid');
    });

    await t.test('a SIGKILLed holder leaves nothing that blocks', async (t) => {
      const dir = shortDir(t);
      const address = lockAddress(dir, { prefer: form });
      await killed(await holder(t, address.path));
      if (form === 'file') t.ok(statSync(address.path).isSocket(), 'the dead holder’s socket file is still there');
      t.equal(await probe(address.path), 'stale', 'and nobody answers on it');
      const lock = await acquireInstanceLock(dir, { prefer: form });
      t.same(await probe(address.path), { pid: process.pid }, 'taken over: this process answers now');
      await lock.release();
      t.equal(await probe(address.path), 'stale', 'released');
    });

    await t.test('the lock is held until released, also within one process', async (t) => {
      const dir = shortDir(t);
      const lock = await acquireInstanceLock(dir, { prefer: form });
      await t.rejects(acquireInstanceLock(dir, { prefer: form }), InstanceLockedError, 'a second take is refused');
      await lock.release();
      const again = await acquireInstanceLock(dir, { prefer: form });
      await again.release();
    });

    await t.test('a legacy pid file naming a live unrelated process does not block, and is removed', async (t) => {
      const dir = shortDir(t);
      writeFileSync(join(dir, LEGACY_PID_FILE), String(process.pid));
      const lock = await acquireInstanceLock(dir, { prefer: form });
      t.notOk(existsSync(join(dir, LEGACY_PID_FILE)), 'the pid file is gone');
      await lock.release();
    });
  });
}

t.test('the socket file is 0600 whatever the umask', async (t) => {
  const dir = shortDir(t);
  const before = process.umask(0);
  let lock;
  try {
    lock = await acquireInstanceLock(dir, { prefer: 'file' });
  } finally {
    process.umask(before);
  }
  t.equal(statSync(lockAddress(dir).path).mode & 0o777, 0o600);
  await lock.release();
  t.notOk(existsSync(lockAddress(dir).path), 'release removes it');
});

t.test('a dir whose socket path is too long uses the abstract namespace (Linux)', { skip: process.platform !== 'linux' }, async (t) => {
  const dir = join(t.testdir(), 'x'.repeat(120));
  mkdirSync(dir);
  const address = lockAddress(dir);
  t.equal(address.kind, 'abstract');
  const lock = await acquireInstanceLock(dir);
  await t.rejects(acquireInstanceLock(dir), InstanceLockedError);
  await lock.release();
});

t.test('control and a gateway lock the same dir independently, and a control lock leaves pid files alone', async (t) => {
  const dir = shortDir(t);
  writeFileSync(join(dir, LEGACY_PID_FILE), 'not a gateway pid file');
  const control = await acquireInstanceLock(dir, { role: 'control' });
  t.equal(lockAddress(dir, { role: 'control' }).path, join(dir, CONTROL_LOCK_SOCKET_FILE), 'control.sock in the data dir');
  t.ok(existsSync(join(dir, LEGACY_PID_FILE)), 'the data dir’s files are not touched');
  await t.rejects(acquireInstanceLock(dir, { role: 'control' }), InstanceLockedError, 'a second control is refused');
  const gateway = await acquireInstanceLock(dir);
  t.same(await probe(lockAddress(dir, { role: 'control' }).path), { pid: process.pid }, 'control’s lock still answers');
  await gateway.release();
  await control.release();
  t.equal(await probe(lockAddress(dir, { role: 'control' }).path), 'stale', 'released');
});

t.test('the abstract names of the two roles differ', { skip: process.platform !== 'linux' }, (t) => {
  const dir = shortDir(t);
  const control = lockAddress(dir, { role: 'control', prefer: 'abstract' });
  const gateway = lockAddress(dir, { prefer: 'abstract' });
  t.match(control.path, /^\0svc-control-lock-[0-9a-f]{64}$/);
  t.match(gateway.path, /^\0svc-gateway-lock-[0-9a-f]{64}$/);
  t.end();
});
