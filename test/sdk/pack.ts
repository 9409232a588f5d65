/**
 * svc-monitor-sdk as a user gets it: `npm pack` of `sdk/` (built by `npm run build`), installed
 * offline into an empty directory outside the repository. The tarball holds the built
 * JavaScript, its declarations, package.json and README, and nothing of `src/`, `protocol/`
 * or zod; every relative import in its `.d.ts` files resolves inside the tarball; a consumer
 * type-checks against it with full library checking; and a three-line script using it calls
 * through a running gateway.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { GENEROUS_LIMITS, UUID_V7, startStack } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

const ROOT = resolve(__dirname, '..', '..');
const SDK = join(ROOT, 'sdk');
const VERSION = (JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')) as { version: string }).version;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command without the npm_* variables an outer `npm test` sets. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('npm_') || k.startsWith('TAP') || k === 'NODE_OPTIONS' || k.startsWith('SVC_')) continue;
    clean[k] = v;
  }
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const limit = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(limit);
      res({ code, stdout, stderr });
    });
  });
}

t.test('npm pack of sdk/ installs on its own and calls through a gateway', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'svc-sdk-pack-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  t.notOk(work.startsWith(ROOT), 'the consumer directory is outside the repository');

  const packed = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], SDK);
  t.equal(packed.code, 0, `npm pack exits 0 ${packed.stderr}`);
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  const files = info!.files.map((f) => f.path).sort();

  await t.test('what ships', async (t) => {
    for (const f of [
      'package.json',
      'README.md',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/generated/errors.js',
      'dist/generated/wire.d.ts',
    ]) {
      t.ok(files.includes(f), `ships ${f}`);
    }
    t.same(
      files.filter((f) => !/^dist\/.+\.(js|d\.ts)$/.test(f) && f !== 'package.json' && f !== 'README.md'),
      [],
      'nothing but dist, package.json and README',
    );
    t.notOk(
      files.some((f) => f.startsWith('src/') || f.startsWith('scripts/')),
      'no sources, no generator',
    );
    for (const f of files.filter((f) => f.endsWith('.d.ts'))) {
      const text = readFileSync(join(SDK, f), 'utf8');
      for (const [, spec] of text.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)) {
        t.ok(spec!.startsWith('.'), `${f}: imports only its own files (${spec})`);
        const target = posix.normalize(posix.join(posix.dirname(f), spec!));
        t.ok(files.includes(`${target}.d.ts`) || files.includes(`${target}/index.d.ts`), `${f}: ${spec} is in the tarball`);
      }
    }
  });

  const consumer = join(work, 'consumer');
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'sdk-consumer', version: '1.0.0', private: true }));
  const installed = await run(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', join(work, info!.filename)],
    consumer,
  );
  t.equal(installed.code, 0, `npm install --offline of the tarball exits 0 ${installed.stderr}`);
  t.same(
    readdirSync(join(consumer, 'node_modules')).filter((n) => !n.startsWith('.')),
    ['svc-monitor-sdk'],
    'no dependency came with it',
  );
  const pkg = JSON.parse(readFileSync(join(consumer, 'node_modules', 'svc-monitor-sdk', 'package.json'), 'utf8')) as { version: string };
  t.equal(pkg.version, VERSION);

  await t.test('its declarations type-check on their own', async (t) => {
    writeFileSync(
      join(consumer, 'check.ts'),
      [
        "import { SvcClient, SvcError, SVC_RATE_LIMITED, type CallResult, type ProvidersAnswer, type Outcome } from 'svc-monitor-sdk';",
        "const svc = new SvcClient({ gatewayUrl: 'http://127.0.0.1:1', key: 'k', retry: { max: 1 } });",
        "export const r: Promise<CallResult<{ ok: boolean }>> = svc.call('ep', 'x', { body: { a: 1 }, timeoutMs: 10 });",
        'export const p: Promise<ProvidersAnswer> = svc.providers();',
        'export const o: Outcome | null = null;',
        'export const isLimited = (e: unknown): boolean => e instanceof SvcError && e.code === SVC_RATE_LIMITED;',
        '',
      ].join('\n'),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      'false',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--target',
      'es2022',
    ];
    args.push('--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), 'check.ts');
    const checked = await run(process.execPath, [tsc, ...args], consumer);
    t.equal(checked.code, 0, `tsc on a consumer of the installed package: ${checked.stdout}${checked.stderr}`);
  });

  await t.test('a three-line script calls through a running gateway', async (t) => {
    const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS });
    const up = await startUpstream(t);
    await stack.addEndpoint({ id: 'ep', upstream: up.url });
    const key = await stack.issueKey({ name: 'packed' });
    await stack.applied(await stack.setFlag('beta_gate_enabled', true));
    writeFileSync(
      join(consumer, 'agent.js'),
      [
        "const { SvcClient } = require('svc-monitor-sdk');",
        'const svc = new SvcClient({ gatewayUrl: process.env.GATEWAY, key: process.env.KEY });',
        "svc.call('ep', 'hello', { body: { n: 1 } }).then((r) => console.log(JSON.stringify({ status: r.status, callId: r.callId, outcome: r.outcome, body: r.body })));",
        '',
      ].join('\n'),
    );
    const ran = await run(process.execPath, ['agent.js'], consumer, { GATEWAY: stack.gateway, KEY: key.key });
    t.equal(ran.code, 0, `the script exits 0 ${ran.stderr}`);
    const out = JSON.parse(ran.stdout) as { status: number; callId: string; outcome: string; body: unknown };
    t.equal(out.status, 200);
    t.match(out.callId, UUID_V7);
    t.equal(out.outcome, 'ok');
    t.same(out.body, { ok: true, method: 'POST', url: '/hello' });
    t.equal(up.requests.length, 1, 'the upstream got the call');
    t.equal(up.requests[0]!.body.toString(), '{"n":1}');
    t.equal(
      dirname(require.resolve('svc-monitor-sdk', { paths: [consumer] })),
      join(consumer, 'node_modules', 'svc-monitor-sdk', 'dist'),
      'resolved from the consumer, not the repository',
    );
  });
});
