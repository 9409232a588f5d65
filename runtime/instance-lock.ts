/**
 * One process per directory: one control per data dir, one gateway per gateway dir (id + data
 * dir). The lock is a Unix domain socket the process listens on: the kernel closes it when the process dies, however it dies, so a lock
 * never outlives its holder and a zombie or a reused pid cannot keep it. Whoever finds the
 * address in use connects to it: an answer (the holder's pid) means a live holder; a refused
 * connection means the socket file was left by a dead one, and it is replaced.
 *
 * The socket is a file in the locked dir (mode 0600 in a 0700 dir): `lock.sock` in a gateway
 * dir, `control.sock` in a data dir. When that path is too long for a socket address (107
 * bytes on Linux), Linux's abstract namespace is used instead, named by the role and the
 * SHA-256 of the dir's real path; nothing is written to disk then.
 *
 * A `lock` pid file left by an earlier version is removed once the socket is held.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, realpathSync, rmSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { CodedError } from '../protocol/coded-error';

/** The lock of a gateway dir. */
export const LOCK_SOCKET_FILE = 'lock.sock';
/** The lock of a data dir, held by its control. */
export const CONTROL_LOCK_SOCKET_FILE = 'control.sock';
/** The pid file earlier versions used; ignored and removed. */
export const LEGACY_PID_FILE = 'lock';
/** How long a contender waits for a live holder to say its pid. @default 2 s */
export const PROBE_TIMEOUT_MS = 2_000;

/** Longest socket path the platform takes (`sun_path` less its NUL). */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

export type LockAddress = { kind: 'file'; path: string } | { kind: 'abstract'; path: string };

/** The lock cannot be taken for another reason than a live holder; the message says which. */
export class InstanceLockError extends CodedError {
  override readonly code = 'SVC_ERR_INSTANCE_LOCK';
}

export class InstanceLockedError extends CodedError {
  override readonly code = 'SVC_ERR_INSTANCE_LOCKED';
  /** The holder's pid, when it said it. */
  readonly pid: number | null;
  constructor(pid: number | null) {
    super(`the dir is locked by a running process${pid === null ? '' : ` (pid ${pid})`}`);
    this.pid = pid;
  }
}

/** What refusing a second control on one data dir says (`svcctl serve control` and `svcctl up`). */
export function controlRunningMessage(pid: number | null): string {
  return `control already running for this data dir${pid === null ? '' : ` (pid ${pid})`}`;
}

/**
 * Who holds control's lock on `dataDir`: `{pid}` for a live control, null when none runs (or the
 * dir does not exist yet). Asks without taking the lock.
 */
export async function controlHolder(dataDir: string): Promise<{ pid: number | null } | null> {
  if (!existsSync(dataDir)) return null;
  const holder = await probe(lockAddress(dataDir, { role: 'control' }).path);
  return holder === 'stale' ? null : holder;
}

export interface InstanceLock {
  readonly address: LockAddress;
  /** Release the lock (once; later calls return the same promise). A closure: safe to pass on. */
  readonly release: () => Promise<void>;
}

export interface LockOptions {
  /** `'abstract'` forces the Linux abstract namespace. @default 'file' */
  prefer?: 'file' | 'abstract';
  /** Whose lock: a gateway's (`lock.sock` in its gateway dir) or control's (`control.sock` in the data dir). @default 'gateway' */
  role?: 'gateway' | 'control';
}

/** Where the lock of `dir` lives. */
export function lockAddress(dir: string, options: LockOptions = {}): LockAddress {
  const role = options.role ?? 'gateway';
  const path = join(dir, role === 'control' ? CONTROL_LOCK_SOCKET_FILE : LOCK_SOCKET_FILE);
  const prefer = options.prefer ?? 'file';
  if (prefer === 'file' && Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return { kind: 'file', path };
  if (process.platform !== 'linux') {
    throw new InstanceLockError(`${path} is longer than a socket address allows (${MAX_SOCKET_PATH_BYTES} bytes); use a shorter data dir`);
  }
  const name = createHash('sha256').update(realpathSync(dir)).digest('hex');
  return { kind: 'abstract', path: `\0svc-${role}-lock-${name}` };
}

function listen(server: net.Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Connect to a lock address: the holder's pid (or null if it said none), or `'stale'`. */
export function probe(path: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ pid: number | null } | 'stale'> {
  return new Promise((resolve) => {
    const socket = net.connect(path);
    let said = '';
    let connected = false;
    const done = (value: { pid: number | null } | 'stale') => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const answer = () => {
      const pid = Number(said.trim());
      done({ pid: Number.isInteger(pid) && pid > 0 ? pid : null });
    };
    // A holder that accepts but says nothing (stopped, busy) is still alive.
    const timer = setTimeout(() => (connected ? answer() : done('stale')), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => (connected = true));
    socket.on('data', (s: string) => (said += s));
    socket.on('end', answer);
    socket.on('error', () => {
      if (connected) answer();
      // Refused or gone: nobody listens. Any other failure to connect is not proof of a
      // holder either; the second listen attempt decides.
      else done('stale');
    });
  });
}

/**
 * Take the lock of `dir` for this process, or throw `InstanceLockedError` when a live process
 * holds it. The lock is released by `release()` or by the process's death.
 */
export async function acquireInstanceLock(dir: string, options: LockOptions = {}): Promise<InstanceLock> {
  const address = lockAddress(dir, options);
  for (let attempt = 0; attempt < 2; attempt++) {
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end(`${process.pid}\n`);
    });
    try {
      await listen(server, address.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const holder = await probe(address.path);
      if (holder !== 'stale') throw new InstanceLockedError(holder.pid);
      if (address.kind === 'file' && lstatSync(address.path, { throwIfNoEntry: false })?.isSocket()) unlinkSync(address.path);
      continue;
    }
    // The lock must never keep the process alive on its own.
    server.unref();
    if (address.kind === 'file') chmodSync(address.path, 0o600);
    if ((options.role ?? 'gateway') === 'gateway') rmSync(join(dir, LEGACY_PID_FILE), { force: true });
    let released: Promise<void> | null = null;
    const release = () =>
      (released ??= new Promise<void>((resolve) => {
        // close() unlinks the socket file; connections already accepted end by themselves.
        server.close(() => resolve());
      }));
    return { address, release };
  }
  throw new InstanceLockError(
    `cannot take the lock at ${address.kind === 'file' ? address.path : 'an abstract socket'}: it stays in use but nobody answers`,
  );
}
