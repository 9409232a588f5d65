/**
 * A throwaway PostgreSQL cluster, for the tests (`test/fixtures/postgres.ts`) and the benches
 * (`bench/settlement.js`, `bench/fanout.js`; they run on the build, hence this module's place
 * in the compiled tree, and `npm run cluster`, `cluster.ts`; control itself never starts a server): `initdb` in a temp dir, the
 * server on a free loopback port, stopped and the directory removed by `stop()`, or by the
 * server's leash when this process ends however it ends.
 *
 * Binaries: `SVC_TEST_PG_BINDIR` when set (a directory without them, e.g. `/nonexistent`,
 * simulates a machine without PostgreSQL), else `pg_config --bindir`, else the newest
 * `/usr/lib/postgresql/<version>/bin` (Debian keeps `initdb` and `postgres` there, off PATH),
 * else PATH. As root (CI containers), `initdb` and `postgres` refuse to run, so both run as the
 * `postgres` user that Debian's package creates, and the temp dir is handed to that user.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { CodedError, InvariantError } from '../protocol/coded-error';

/**
 * A throwaway PostgreSQL cluster (this file: tests, benches, `npm run cluster`)
 * cannot start here, or its `initdb` failed, or its server did not accept connections in time.
 */
export class ClusterStartError extends CodedError {
  override readonly code = 'SVC_ERR_PG_CLUSTER_START';
}

/** Directory of `initdb` and `postgres`, overriding the search (a path without them: PostgreSQL is missing). */
export const PG_BINDIR_ENV = 'SVC_TEST_PG_BINDIR';

/** Milliseconds to wait for a started server to accept connections. */
const START_TIMEOUT_MS = 30_000;
/** Fresh ports tried when the one picked was taken before the server bound it. */
const PORT_ATTEMPTS = 5;

const hasServer = (dir: string): boolean => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));

function pgConfigBindir(): string | null {
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Debian's versioned server directories, newest first. */
function debianBindirs(): string[] {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return [];
  return readdirSync(base)
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(base, v, 'bin'));
}

/** The directory holding `initdb` and `postgres`, or null when there is none. */
export function pgBinDir(): string | null {
  const override = process.env[PG_BINDIR_ENV];
  if (override !== undefined && override !== '') return hasServer(override) ? override : null;
  const candidates = [pgConfigBindir(), ...debianBindirs(), ...(process.env.PATH ?? '').split(':')];
  return candidates.find((dir): dir is string => dir !== null && dir !== '' && hasServer(dir)) ?? null;
}

interface RunAs {
  uid: number;
  gid: number;
}

/** As root, the `postgres` user to run the server as; null when not root. Throws when root has no such user. */
function runAs(): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new ClusterStartError('running as root and there is no `postgres` user to run PostgreSQL as');
  }
}

/** Why a throwaway cluster cannot start here (without advice: the caller adds its own), or null when it can. */
export function clusterUnavailable(): string | null {
  if (pgBinDir() === null) {
    const where = process.env[PG_BINDIR_ENV]
      ? `${PG_BINDIR_ENV}=${process.env[PG_BINDIR_ENV]}`
      : 'pg_config, /usr/lib/postgresql/*/bin or PATH';
    return `PostgreSQL's initdb and postgres are not in ${where}`;
  }
  try {
    runAs();
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

export interface ClusterOptions {
  /**
   * Run as a production server does, at PostgreSQL's defaults (flushing to disk: `fsync`,
   * `synchronous_commit`, `full_page_writes`; 128 MB of shared buffers): for measurements. Off
   * by default, for tests: the cluster is thrown away, so nothing it holds must survive a
   * crash, and skipping the flushes spares every commit a disk flush on a shared machine
   * (nothing may assert durability against it); 32 MB of shared buffers, as many test
   * processes run clusters at once.
   */
  durable?: boolean;
  /** Further server settings, each passed as `-c name=value` (after the defaults, so they win). */
  settings?: Readonly<Record<string, string>>;
  /**
   * Run the server in a process group of its own, so that a terminal's Ctrl-C (SIGINT to the
   * foreground group, which PostgreSQL takes as a fast shutdown) reaches only the process that
   * started it, which then stops it when it chooses (`npm run cluster`: after the controls).
   * The leash holds either way.
   */
  processGroup?: boolean;
  /**
   * Append the server's log to this file: its stderr, across restarts (what it reports at the
   * `log_min_messages` level, and what settings such as `log_min_duration_statement` or
   * `auto_explain` make it log). Without it the log is read and dropped; only its last lines
   * are kept, to report a server that did not start.
   */
  logFile?: string;
  /**
   * Lines put first in the cluster's `pg_hba.conf` (the first line that matches a connection
   * decides how it authenticates), before initdb's, which trust every local and loopback
   * connection: e.g. `host all svc_pw 127.0.0.1/32 scram-sha-256` for a role that must give a
   * password. The superuser stays trusted unless a line names it.
   */
  hba?: readonly string[];
}

export interface ThrowawayCluster {
  /** The superuser (`postgres`); trusted on loopback, nobody else can connect. */
  user: string;
  port: number;
  /** The cluster's directory (data, unix socket). */
  dir: string;
  /** The unix socket directory. */
  socketDir: string;
  /** URL of database `name` on this cluster. */
  url(name: string): string;
  /** Milliseconds from `initdb` to the first connection. */
  startMs: number;
  /** The postmaster's process id; every server process (backends, workers) is its child. */
  pid: number;
  /** Run `text` as the superuser on database `postgres` (e.g. `CREATE DATABASE`). */
  query(text: string): Promise<void>;
  /**
   * Restart the server as `pg_ctl restart -m fast` would: a fast shutdown (every connection
   * is closed), then the same cluster started again on the same port. Resolves once it accepts
   * connections again.
   */
  restart(): Promise<void>;
  /**
   * Stop the server as `pg_ctl stop -m fast` would (every connection is closed), keeping the
   * cluster to start again with {@link resume}: the database away for as long as a test needs.
   */
  pause(): Promise<void>;
  /** Start the server paused by {@link pause} again, on the same port; resolves once it accepts connections. */
  resume(): Promise<void>;
  /** Stop the server (fast shutdown) and remove the directory. */
  stop(): Promise<void>;
}

const SUPERUSER = 'postgres';

function run(file: string, args: string[], as: RunAs | null, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' }, ...as });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new ClusterStartError(`${file} exited with ${code}:\n${output}`))));
  });
}

/** A loopback port nothing listens on right now (the server may still lose it to a race: retried). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `postgres` is started by a small shell that keeps it on a leash: when this process's end of
 * the shell's stdin closes (a normal stop, or this process dying however it dies, even killed),
 * the shell asks the server for a fast shutdown and, once it is gone, removes the cluster's
 * directory (`$1`), unless a restart asked to keep it (`$1/restarting`, removed instead). No server outlives the
 * process that started it. A server that stopped on its own (a port taken, retried) is not
 * there to stop, and its directory stays for the next attempt.
 */
const RESTARTING = 'restarting';
const LEASH = `dir=$1; shift
exec 3<&0
"$@" 3<&- </dev/null &
pid=$!
{
  read -r _ <&3
  if kill -INT "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    if [ -e "$dir/${RESTARTING}" ]; then rm -f -- "$dir/${RESTARTING}"; else rm -rf -- "$dir"; fi
  fi
} &
wait "$pid"`;

class ServerExited extends CodedError {
  override readonly code = 'SVC_ERR_PG_SERVER_EXITED';
  constructor(readonly log: string) {
    super(`postgres exited before accepting connections:\n${log}`);
  }
}

/** Start the server on `port`; resolves once it accepts connections, rejects with `ServerExited` if it stops first. */
function startServer(bin: string, dir: string, port: number, as: RunAs | null, options: ClusterOptions): Promise<ChildProcess> {
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    ...(options.durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', shared_buffers: '32MB' }),
    lc_messages: 'C',
    ...options.settings,
  };
  const args = [
    ...['-D', join(dir, 'data'), '-p', String(port), '-k', join(dir, 'sock')],
    ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
  const server = spawn('/bin/sh', ['-c', LEASH, 'sh', dir, join(bin, 'postgres'), ...args], {
    cwd: dir,
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { ...process.env, LC_ALL: 'C' },
    detached: options.processGroup === true,
    ...as,
  });
  if (options.logFile !== undefined) server.stderr.pipe(createWriteStream(options.logFile, { flags: 'a' }));
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => {
      server.stdin.end();
      reject(new ClusterStartError(`postgres did not accept connections within ${START_TIMEOUT_MS} ms:\n${log}`));
    }, START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-20_000);
      if (log.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        server.off('exit', onExit);
        resolve(server);
      }
    };
    const onExit = () => {
      clearTimeout(timer);
      server.stdin.end();
      reject(new ServerExited(log));
    };
    // Keep reading after the start, or a full pipe would stall the server's logging.
    server.stderr.on('data', onData);
    server.once('exit', onExit);
    server.once('error', reject);
  });
}

/**
 * Start a cluster. Throws `ClusterStartError` (`SVC_ERR_PG_CLUSTER_START`) with `clusterUnavailable()`'s
 * reason when there is no PostgreSQL to start, or when initdb fails or the server does not answer in
 * time; `ServerExited` (`SVC_ERR_PG_SERVER_EXITED`) when the server stops before it accepts connections.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<ThrowawayCluster> {
  const reason = clusterUnavailable();
  if (reason !== null) throw new ClusterStartError(reason);
  const bin = pgBinDir()!;
  const as = runAs();
  const began = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  // Until the server runs (its leash removes the directory after it), and should `stop` never run.
  const removeDir = () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  process.once('exit', removeDir);
  let server: ChildProcess | null = null;
  let port = 0;
  try {
    mkdirSync(join(dir, 'sock'));
    if (as !== null) for (const path of [dir, join(dir, 'sock')]) chownSync(path, as.uid, as.gid);
    // Trust authentication: initdb's pg_hba.conf admits only the unix socket (in this 0700
    // dir) and loopback, and the server listens on 127.0.0.1 alone.
    const initdbArgs = ['-D', join(dir, 'data'), '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'];
    await run(join(bin, 'initdb'), initdbArgs, as, dir);
    if (options.hba !== undefined && options.hba.length > 0) {
      const hbaFile = join(dir, 'data', 'pg_hba.conf');
      writeFileSync(hbaFile, `${options.hba.join('\n')}\n${readFileSync(hbaFile, 'utf8')}`);
    }
    for (let attempt = 1; server === null; attempt++) {
      port = await freePort();
      try {
        server = await startServer(bin, dir, port, as, options);
      } catch (err) {
        const lostPort = err instanceof ServerExited && /could not bind|already in use/i.test(err.log);
        if (!lostPort || attempt === PORT_ATTEMPTS) throw err;
      }
    }
  } catch (err) {
    removeDir();
    throw err;
  }
  let running = server;
  const url = (name: string) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${name}`;
  const connectAdmin = async () => {
    const client = new Client(url('postgres'));
    await client.connect();
    return client;
  };
  let admin: Client | null = null;
  const shutDown = async () => {
    if (running.exitCode === null && running.signalCode === null) {
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.stdin!.end();
      await exited;
    }
  };
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      await admin?.end().catch(() => undefined);
      await shutDown();
      removeDir();
      process.off('exit', removeDir);
    })());
  try {
    admin = await connectAdmin();
  } catch (err) {
    await stop();
    throw err;
  }
  const pause = async () => {
    if (stopped !== null) throw new InvariantError('pause: the cluster is stopped');
    await admin?.end().catch(() => undefined);
    admin = null; // connected again by the next query
    writeFileSync(join(dir, RESTARTING), ''); // the leash removes it instead of the directory
    await shutDown();
  };
  const resume = async () => {
    if (stopped !== null) throw new InvariantError('resume: the cluster is stopped');
    running = await startServer(bin, dir, port, as, options);
    pid = postmasterPid();
  };
  const postmasterPid = () => Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  let pid = postmasterPid();
  return {
    user: SUPERUSER,
    port,
    dir,
    socketDir: join(dir, 'sock'),
    url,
    startMs: Math.round(performance.now() - began),
    // The first line of postmaster.pid, written before the server accepts connections.
    get pid() {
      return pid;
    },
    query: async (text) => {
      admin ??= await connectAdmin();
      await admin.query(text);
    },
    restart: async () => {
      await pause();
      await resume();
    },
    pause,
    resume,
    stop,
  };
}
