/**
 * `npm run cluster`: svc as a cluster on this machine, in one command. A throwaway PostgreSQL
 * (`demo/throwaway-postgres.ts`), two controls on its one database (`svcctl serve control`
 * with `SVC_DATABASE_URL`, a data dir each) and three gateways (`svcctl serve gateway`, both
 * controls listed, in a different order for the second gateway), all on free loopback ports,
 * in one temporary directory. Once every gateway holds a snapshot it prints the URLs and the
 * token files; Ctrl-C (SIGINT or SIGTERM) stops the gateways first (they ship their last
 * outcomes), then the controls, then PostgreSQL, and removes the directory. When a process
 * dies on its own, the rest are stopped the same way and the command exits 1.
 *
 * Every svc process runs supervised (`SVC_SUPERVISED=1`, as under `svcctl up`): it leaves a
 * terminal's Ctrl-C to this process, which stops them in order, and it stops by itself when
 * this process goes away (its stdin closes). PostgreSQL is on the same kind of leash.
 *
 * `--json` prints one JSON object once ready (urls, pids, token files, the work dir) instead of
 * the banner. Needs Debian's `postgresql` package; exits 1 saying how to install it otherwise.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants, copyFileSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE } from '../control/bootstrap';
import { clusterUnavailable, startCluster, type ThrowawayCluster } from './throwaway-postgres';
import { METRICS_TOKEN_FILE } from '../protocol/bearer';
import { CodedError } from '../protocol/coded-error';
import { READY_ENV, READY_PREFIX } from '../cli/commands/serve/lifecycle';
import { CONTROL_ON_FREE_PORTS, ReadyLine } from '../protocol/runtime';

const CLI = resolve(__dirname, '..', 'cli', 'index.js');
const JSON_OUTPUT = process.argv.includes('--json');
const DATABASE = 'svc';
/** How long a process may take to report ready, and a gateway to receive its first snapshot. */
const READY_TIMEOUT_MS = 60_000;
/** Grace between SIGTERM and SIGKILL when stopping a process. */
const STOP_GRACE_MS = 10_000;
/** Each gateway's controls, by index into the controls (A = 0, B = 1): spread over both. */
const GATEWAY_CONTROLS: readonly (readonly number[])[] = [
  [0, 1],
  [1, 0],
  [0, 1],
];
const CONTROL_NAMES = ['a', 'b'];

const say = (line = ''): void => void process.stdout.write(`${line}\n`);
const warn = (line: string): void => void process.stderr.write(`${line}\n`);

class ClusterFailure extends CodedError {
  override readonly code = 'SVC_ERR_DEMO_CLUSTER';
}

interface Proc {
  name: string;
  child: ChildProcess;
  log: string;
  /** Resolves, with what happened, once the process has exited. */
  exited: Promise<string>;
}

const gone = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/** The environment without the caller's SVC_* settings (they would redirect data dirs, ports, tokens). */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_')) env[k] = v;
  return { ...env, ...extra, [READY_ENV]: '1' };
}

/** The last lines of a process's log, for a failure message. */
function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** `svcctl serve <args>`, its output in `<work>/<name>.log`; resolves with its ready line. */
function startRole(work: string, name: string, args: string[], env: NodeJS.ProcessEnv, procs: Proc[]): Promise<ReadyLine> {
  const log = join(work, `${name}.log`);
  const file = createWriteStream(log);
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.pipe(file, { end: false });
  const exited = new Promise<string>((resolvePromise) => {
    // 'close': after the process exited and its output was read to the end.
    child.once('close', (code, signal) => file.end(() => resolvePromise(`${name} exited (${signal ?? `code ${code}`}):\n${tail(log)}`)));
  });
  procs.push({ name, child, log, exited });
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new ClusterFailure(`${name} was not ready within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      if (!line.startsWith(READY_PREFIX)) return void file.write(`${line}\n`);
      clearTimeout(timer);
      resolvePromise(ReadyLine.parse(JSON.parse(line.slice(READY_PREFIX.length))));
    });
    void exited.then((what) => {
      clearTimeout(timer);
      reject(new ClusterFailure(`${what.replace(':', ' before it was ready:')}`));
    });
  });
}

function stopProc({ child }: Proc): Promise<void> {
  if (gone(child)) return Promise.resolve();
  return new Promise((resolvePromise) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(kill);
      resolvePromise();
    });
    child.kill('SIGTERM');
  });
}

async function get(url: string, token: string): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
  const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  return { status: res.status, body };
}

async function waitUntil(what: string, probe: () => Promise<boolean>, procs: readonly Proc[]): Promise<void> {
  const end = Date.now() + READY_TIMEOUT_MS;
  while (!(await probe().catch(() => false))) {
    const dead = procs.find((p) => gone(p.child));
    if (dead) throw new ClusterFailure(await dead.exited);
    if (Date.now() > end) throw new ClusterFailure(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolvePromise) => {
    const done = (signal: NodeJS.Signals) => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolvePromise(signal);
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}

/** What is up, once it is: one JSON object with `--json`, else a table and how to use it. */
function announce(up: {
  work: string;
  databaseUrl: string;
  postgresDir: string;
  postgresPid: number;
  dirs: string[];
  controls: ReadyLine[];
  gateways: ReadyLine[];
  procs: Proc[];
}): void {
  const { work, databaseUrl, postgresDir, postgresPid, dirs, controls, gateways, procs } = up;
  const pids = { postgres: postgresPid, ...Object.fromEntries(procs.map((p) => [p.name, p.child.pid!])) };
  const tokens = Object.fromEntries(dirs.map((d, i) => [`control-${CONTROL_NAMES[i]}`, join(d, ADMIN_TOKEN_FILE)]));
  const letter = (i: number) => CONTROL_NAMES[i]!.toUpperCase();
  if (JSON_OUTPUT) {
    say(
      JSON.stringify({
        status: 'ready',
        work_dir: work,
        database_url: databaseUrl,
        postgres_dir: postgresDir,
        controls: controls.map((c, i) => ({
          name: letter(i),
          data_dir: dirs[i],
          admin_token_file: join(dirs[i]!, ADMIN_TOKEN_FILE),
          urls: c.urls,
        })),
        gateways: gateways.map((g, i) => ({ id: `gw-${i + 1}`, url: g.urls.gateway, controls: GATEWAY_CONTROLS[i]!.map(letter) })),
        admin_tokens: tokens,
        pids,
      }),
    );
  } else {
    const row = (label: string, value: string) => say(`  ${label.padEnd(28)} ${value}`);
    say('svc cluster is up: two controls on one PostgreSQL database, three gateways');
    row('postgresql', databaseUrl);
    for (const [i, c] of controls.entries()) {
      row(`control ${letter(i)} admin + sync`, c.urls.control!);
      row(`control ${letter(i)} public api`, c.urls.api!);
      row(`control ${letter(i)} indexer`, c.urls.indexer!);
    }
    for (const [i, g] of gateways.entries())
      row(`gateway ${i + 1} (controls ${GATEWAY_CONTROLS[i]!.map(letter).join(', ')})`, g.urls.gateway!);
    row('admin token, control A', `${tokens['control-a']}  (use this one, with either control)`);
    row('admin token, control B', `${tokens['control-b']}  (a copy of A's)`);
    row('work dir', `${work}  (removed on exit; each process logs to <name>.log there)`);
    say(`svcctl: node dist/cli/index.js --data-dir ${dirs[0]} status   (control B: --data-dir ${dirs[1]})`);
    say('Press Ctrl-C to stop.');
  }
}

async function main(): Promise<number> {
  const missing = clusterUnavailable();
  if (missing !== null) {
    warn(`npm run cluster needs PostgreSQL: ${missing}; install it with \`apt-get install -y postgresql\` (Debian)`);
    return 1;
  }
  // Listening from the start: a Ctrl-C while things start stops what has started.
  const signalled = untilSignal().then((s) => `signal:${s}`);
  const work = mkdtempSync(join(tmpdir(), 'svc-cluster-'));
  const procs: Proc[] = [];
  let pg: ThrowawayCluster | null = null;
  let stopping = false;
  const stopAll = async () => {
    // Gateways first, so they ship their last outcomes while the controls still run; the
    // controls before the database they write to.
    await Promise.all(procs.filter((p) => p.name.startsWith('gateway')).map(stopProc));
    await Promise.all(procs.map(stopProc));
    await pg?.stop();
    rmSync(work, { recursive: true, force: true, maxRetries: 5 });
  };
  /** Before each start: nothing more starts once stopping began. */
  const go = () => {
    if (stopping) throw new ClusterFailure('stopped while starting');
  };
  const run = async (): Promise<string> => {
    // Its own process group: a terminal's Ctrl-C reaches this process (which stops the
    // database last), not the server, which would shut down under the running controls.
    pg = await startCluster({ processGroup: true });
    go();
    await pg.query(`CREATE DATABASE ${DATABASE}`);
    const databaseUrl = pg.url(DATABASE);
    const dirs = CONTROL_NAMES.map((n) => join(work, `control-${n}`));

    const controlArgs = (dir: string) => ['control', '--data-dir', dir, ...CONTROL_ON_FREE_PORTS];
    // The database URL in the environment, not the arguments (as `svcctl up` does).
    const controlEnv = { SVC_DATABASE_URL: databaseUrl };
    go();
    const controls: ReadyLine[] = [await startRole(work, 'control-a', controlArgs(dirs[0]!), controlEnv, procs)];
    // Control reads its admin, sync and metrics tokens from its data dir, creating them when
    // missing: a second control on the same database would make tokens of its own, and refuse
    // the first one's. So the second starts with copies of the first one's token files. Copied
    // into a fresh directory before it starts, so a control that keeps its tokens elsewhere
    // (e.g. in the database) finds the same values; checked below either way.
    mkdirSync(dirs[1]!, { mode: 0o700 });
    for (const file of [ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE, METRICS_TOKEN_FILE])
      copyFileSync(join(dirs[0]!, file), join(dirs[1]!, file), constants.COPYFILE_EXCL);
    go();
    controls.push(await startRole(work, 'control-b', controlArgs(dirs[1]!), controlEnv, procs));

    const token = (file: string) => readFileSync(join(dirs[0]!, file), 'utf8').trim();
    const adminToken = token(ADMIN_TOKEN_FILE);
    const metricsToken = token(METRICS_TOKEN_FILE);
    for (const [i, c] of controls.entries()) {
      const status = await get(`${c.urls.control}/_admin/v1/status`, adminToken);
      if (status.status !== 200) throw new ClusterFailure(`control ${CONTROL_NAMES[i]} refuses control a's admin token (${status.status})`);
    }

    const gatewayEnv = { SVC_SYNC_TOKEN: token(SYNC_TOKEN_FILE), SVC_METRICS_TOKEN: metricsToken };
    const gateways: ReadyLine[] = [];
    for (const [i, order] of GATEWAY_CONTROLS.entries()) {
      const id = `gw-${i + 1}`;
      const urls = order.flatMap((c) => ['--control', controls[c]!.urls.control!]);
      const args = ['gateway', '--data-dir', join(work, 'gateways'), '--host', '127.0.0.1', '--gateway-port', '0', '--id', id, ...urls];
      go();
      gateways.push(await startRole(work, `gateway-${i + 1}`, args, gatewayEnv, procs));
    }
    for (const [i, g] of gateways.entries())
      await waitUntil(
        `gateway ${i + 1} to receive its snapshot`,
        async () => (await get(`${g.urls.gateway}/health`, metricsToken)).status === 200,
        procs,
      );

    announce({ work, databaseUrl, postgresDir: pg.dir, postgresPid: pg.pid, dirs, controls, gateways, procs });

    return Promise.race([signalled, ...procs.map((p) => p.exited)]);
  };
  const outcome = run().catch((err: unknown) => (err instanceof ClusterFailure ? err.message : String((err as Error).stack ?? err)));
  const reason = await Promise.race([outcome, signalled]);
  if (!reason.startsWith('signal:')) warn(`npm run cluster: ${reason}\nstopping the rest`);
  stopping = true;
  await stopAll(); // ends a start under way too: run() then settles, starting nothing more
  await outcome;
  await stopAll(); // what run() started meanwhile (PostgreSQL, when it was still starting)
  if (!reason.startsWith('signal:')) return 1;
  if (!JSON_OUTPUT) say('svc cluster stopped.');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    warn(String((err as Error).stack ?? err));
    process.exit(1);
  },
);
