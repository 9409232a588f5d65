/**
 * The TypeScript and JavaScript blocks of sdk/README.md compile against the SDK's declarations
 * under `strict` and `exactOptionalPropertyTypes`, as a careful user's project would compile
 * them: an example that stops compiling (a renamed option, a type that no longer fits) fails
 * here. Each block is its own module; a block that imports nothing gets the package's names
 * it uses, and `svc` (a client) when it uses one without making it. Runs against the built
 * package (`npm run build` first).
 */
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const README = join(ROOT, 'sdk', 'README.md');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The fenced blocks tagged ts, typescript or js, with the line each starts on. */
function codeBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(ts|typescript|js|javascript)\s*$/.exec(lines[i]!);
    if (open === null) continue;
    const start = i + 1;
    const body: string[] = [];
    for (i = start; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    blocks.push({ line: start + 1, code: body.join('\n') });
  }
  return blocks;
}

/** The module tsc checks for one block. */
function moduleOf(code: string): string {
  const prelude: string[] = [];
  if (!/from 'svc-monitor-sdk'|require\('svc-monitor-sdk'\)/.test(code)) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the built package's run-time names
    const exported = Object.keys(require(join(ROOT, 'sdk')) as object);
    const used = exported.filter((name) => new RegExp(`\\b${name}\\b`).test(code));
    const needsClient = /\bsvc\./.test(code) && !/\bconst svc\b/.test(code);
    const names = new Set([...used, ...(needsClient ? ['SvcClient'] : [])]);
    if (names.size > 0) prelude.push(`import { ${[...names].join(', ')} } from 'svc-monitor-sdk';`);
    if (needsClient) prelude.push('declare const svc: SvcClient;');
  }
  return [...prelude, code, 'export {};', ''].join('\n');
}

/** tsc over the given modules in a fresh project where `svc-monitor-sdk` is this repository's sdk/. */
function typeCheck(t: Test, modules: string[]): { code: number | null; out: string; files: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sdk-readme-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(join(ROOT, 'sdk'), join(dir, 'node_modules', 'svc-monitor-sdk'), 'dir');
  const files = modules.map((text, i) => {
    const file = `block-${i + 1}.ts`;
    writeFileSync(join(dir, file), text);
    return file;
  });
  const ran = spawnSync(
    process.execPath,
    [
      TSC,
      '--noEmit',
      '--strict',
      '--exactOptionalPropertyTypes',
      '--target',
      'es2022',
      '--module',
      'esnext',
      '--moduleResolution',
      'bundler',
      '--types',
      'node',
      '--typeRoots',
      join(ROOT, 'node_modules', '@types'),
      ...files,
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  return { code: ran.status, out: `${ran.stdout}${ran.stderr}`, files };
}

t.test('every TypeScript block of sdk/README.md compiles under strict and exactOptionalPropertyTypes', async (t) => {
  const blocks = codeBlocks(readFileSync(README, 'utf8'));
  t.ok(blocks.length >= 4, `the README has its examples (${blocks.length} blocks)`);
  t.ok(
    blocks.some((b) => b.code.includes('ERROR_CATALOGUE[err.code]')),
    'one indexes ERROR_CATALOGUE with an SvcError code',
  );
  const checked = typeCheck(
    t,
    blocks.map((b) => moduleOf(b.code)),
  );
  const where = checked.out.replace(/block-(\d+)\.ts/g, (_, n: string) => `README block at line ${blocks[Number(n) - 1]!.line}`);
  t.equal(checked.code, 0, `tsc: ${where}`);
});

t.test('the check fails on an example that does not compile', async (t) => {
  const broken = [
    "svc.call('weather', 'forecast', { timeoutMs: 'soon' });",
    'const e: SvcError = null as unknown as SvcError; const n: number = ERROR_CATALOGUE[e.code].status;',
    "new SvcClient({ gatewayUrl: 'http://x', retry: { max: undefined as number | undefined, nope: 1 } });",
  ];
  for (const code of broken) {
    const checked = typeCheck(t, [moduleOf(code)]);
    t.not(checked.code, 0, `refused: ${code}`);
  }
});
