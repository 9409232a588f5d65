/**
 * `svcctl up`: the whole stack on this machine. Starts control and a gateway as separate
 * processes (each `svcctl serve <role>`), waits until both say they are ready, prints the
 * four URLs, and stops both on SIGINT/SIGTERM. If one of them dies, the other is stopped too
 * and `up` exits 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { controlHolder, controlRunningMessage } from '../../runtime/instance-lock';
import { ReadyLine, type UpReady } from '../../protocol/runtime';
import type { Config } from '../../config/load';
import { AdminClient } from '../client';
import { resolveAdminToken } from '../deps';
import type { Output } from '../output';
import { SAMPLE_ENDPOINT_ID, registerSample, startSampleUpstream, type SampleUpstream } from '../sample';
import { CliError, EXIT_FAILURE, EXIT_OK } from '../exit-codes';
import { READY_ENV, READY_PREFIX, untilSignal } from './serve/lifecycle';

/** How long a role may take to report ready. @default 60 s */
export const READY_TIMEOUT_MS = 60_000;
/** Grace between SIGTERM and SIGKILL when stopping children. @default 10 s */
export const STOP_GRACE_MS = 10_000;

type Ready = ReadyLine;

export interface UpOptions {
  /** Global options to pass on to each child (`--config`, `--data-dir`). */
  passArgs: string[];
  /**
   * Roles to start, in order; each may depend on URLs announced by earlier ones. `env` is added
   * to the role's environment (settings that must not show in its arguments).
   */
  roles: { role: string; args: (ready: Ready[]) => string[]; env?: NodeJS.ProcessEnv }[];
  /** The data dir the roles use: refused at once when a control already runs on it. */
  dataDir?: string;
  /** Once ready, print one JSON object (`{"status":"ready","urls","pids"}`) instead of the banner. */
  json?: boolean;
  /**
   * `--sample`: also start the sample provider (../sample.ts) on 127.0.0.1 and register it
   * through control's admin API, with the token svcctl would present (`--token-file`, else root's).
   */
  sample?: { config: Readonly<Config>; tokenFile: string | undefined };
}

function startRole(args: string[], env: NodeJS.ProcessEnv, echo: (line: string) => void): { child: ChildProcess; ready: Promise<Ready> } {
  const child = spawn(process.execPath, [process.argv[1]!, ...args], {
    env: { ...process.env, ...env, [READY_ENV]: '1' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ready = new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new CliError(`${args.join(' ')} did not become ready within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      if (line.startsWith(READY_PREFIX)) {
        clearTimeout(timer);
        resolve(ReadyLine.parse(JSON.parse(line.slice(READY_PREFIX.length))));
      } else echo(line);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new CliError(`svcctl ${args.join(' ')} exited (${signal ?? `code ${code}`}) before it was ready; see its log above`));
    });
  });
  return { child, ready };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function printBanner(urls: Record<string, string>, adminToken: string | undefined, sample: boolean, out: Output): void {
  out.line('svc is up');
  const row = (label: string, value: string) => out.line(`  ${label.padEnd(26)} ${value}`);
  for (const [name, label] of [
    ['gateway', 'gateway ({market_url})'],
    ['api', 'public api ({api_url})'],
    ['indexer', 'indexer ({indexer_url})'],
    ['control', 'control admin + sync'],
  ] as const) {
    if (urls[name]) row(label, urls[name]);
  }
  if (adminToken !== undefined) row('admin token', adminToken);
  if (sample && urls.gateway) {
    row('sample provider', `${urls.gateway}/v1/${SAMPLE_ENDPOINT_ID}/ok  (also /fail, /slow?ms=2000, /reset)`);
  }
  out.line('Run svcctl in a second terminal (it finds this stack through the data dir). Press Ctrl-C to stop.');
}

export async function run(opts: UpOptions, deps: { out: Output }): Promise<number> {
  // Control would refuse too, but only after up had echoed its start; say it first, and alone.
  const holder = opts.dataDir === undefined ? null : await controlHolder(resolve(opts.dataDir));
  if (holder !== null) throw new CliError(controlRunningMessage(holder.pid));
  const children: ChildProcess[] = [];
  const ready: Ready[] = [];
  // Stop in reverse start order: the gateway ships its last outcomes while control still runs.
  const stopAll = async () => {
    for (const child of children.slice().reverse()) await stop(child);
  };
  try {
    for (const role of opts.roles) {
      // With --json, stdout carries only the ready object; anything else a child prints goes to stderr.
      const echo = opts.json ? (line: string) => deps.out.error(line) : (line: string) => deps.out.line(line);
      const started = startRole(['serve', role.role, ...opts.passArgs, ...role.args(ready)], role.env ?? {}, echo);
      children.push(started.child);
      ready.push(await started.ready);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }

  const urls = Object.assign({}, ...ready.map((r) => r.urls)) as Record<string, string>;
  let sample: SampleUpstream | null = null;
  if (opts.sample) {
    try {
      sample = await startSampleUpstream('127.0.0.1');
      const token = resolveAdminToken(opts.sample.config, opts.sample.tokenFile);
      await registerSample(new AdminClient({ baseUrl: urls.control!, token }), sample.url);
    } catch (err) {
      await sample?.close();
      await stopAll();
      throw err;
    }
  }
  if (opts.json) deps.out.json({ status: 'ready', urls, pids: Object.fromEntries(ready.map((r) => [r.role, r.pid])) } satisfies UpReady);
  else printBanner(urls, ready.find((r) => r.role === 'control')?.admin_token, sample !== null, deps.out);

  const died = new Promise<string>((resolve) => {
    for (const [i, child] of children.entries()) {
      child.once('exit', (code, signal) => resolve(`${opts.roles[i]!.role} exited (${signal ?? `code ${code}`})`));
    }
  });
  const reason = await Promise.race([untilSignal().then((s) => `signal:${s}`), died]);
  if (!reason.startsWith('signal:')) deps.out.error(`svcctl up: ${reason}; stopping the rest`);
  await stopAll();
  await sample?.close();
  if (reason.startsWith('signal:')) {
    if (!opts.json) deps.out.line('svc stopped.');
    return EXIT_OK;
  }
  return EXIT_FAILURE;
}
