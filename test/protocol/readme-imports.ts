/**
 * Each folder README's "may import" list is checked against the code. A README states it as a
 * paragraph starting "May import" or as the bullets of a "## What it may import" section; the
 * list is what is written in backticks before the first "Must", "Never" or "Nothing else" of
 * each paragraph or bullet: folders (`protocol/`, `../state/`), files (`../proxy/index.ts`)
 * and packages (`zod`). Every file is governed by the nearest README above it that has such a
 * list; its relative imports must stay in its folder or reach a listed folder or file, and its
 * packages must be listed (Node built-ins always may be). The finer rules (which file of a
 * folder, the drivers only under `store/`) are test/protocol/layout.ts and test/gateway/layout.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, posix, relative } from 'node:path';
import t from 'tap';
import { ROOT, importsOf, sourceFiles, type Import } from '../fixtures/imports';

const SOURCE_DIRS = ['config', 'protocol', 'runtime', 'control', 'gateway', 'cli', 'demo'];
/** How a package name is written (what the import reader also picks out of strings is not). */
const PACKAGE = /^(@[a-z0-9-]+\/)?[a-z0-9][a-z0-9._-]*$/;

export interface MayImport {
  /** The README's folder, repo-relative. */
  dir: string;
  /** Repo-relative folders (trailing `/`) and files (no extension) it may import. */
  paths: string[];
  packages: string[];
}

/** The "may import" text of a README: its paragraphs or bullets, each cut at what it forbids; null when it has none. */
export function mayImportText(markdown: string): string[] | null {
  const lines = markdown.split(/\r?\n/);
  const chunks: string[] = [];
  const section = lines.findIndex((l) => /^##\s+What it may import\s*$/i.test(l));
  if (section >= 0) {
    for (const line of lines.slice(section + 1)) {
      if (/^##\s/.test(line)) break;
      if (/^\*\s/.test(line)) chunks.push(line.slice(2));
      else if (/^\s+\S/.test(line) && chunks.length > 0) chunks.push(`${chunks.pop()!} ${line.trim()}`);
      else if (line.trim() !== '' && chunks.length > 0) break; // the bullets are over
    }
  } else {
    const start = lines.findIndex((l) => /^May import\b/.test(l));
    if (start < 0) return null;
    let paragraph = '';
    for (let i = start; i < lines.length && lines[i]!.trim() !== ''; i++) paragraph += ' ' + lines[i]!.trim();
    chunks.push(paragraph.trim());
  }
  return chunks.map((c) => c.split(/\b(?:Must|Never|Nothing else)\b/)[0]!).filter((c) => c.trim() !== '');
}

/** The list of the README in `dir` (repo-relative), from its text. */
export function parseMayImport(dir: string, text: readonly string[]): MayImport {
  const paths: string[] = [];
  const packages: string[] = [];
  for (const chunk of text) {
    for (const [, item] of chunk.matchAll(/`([^`]+)`/g)) {
      const isPath = item!.endsWith('/') || item!.endsWith('.ts');
      if (!isPath) {
        if (PACKAGE.test(item!)) packages.push(item!);
        continue;
      }
      const rooted = !item!.startsWith('.') && SOURCE_DIRS.includes(item!.split('/')[0]!);
      const path = posix.normalize(rooted ? item! : posix.join(dir, item!));
      paths.push(path.endsWith('/') ? path : path.replace(/\.ts$/, ''));
    }
  }
  return { dir, paths, packages };
}

/** The package an import names (`ajv/dist/2020` → `ajv`, `@scope/x/y` → `@scope/x`). */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The imports of `imports` that the list governing their file does not allow. */
export function violations(rules: readonly MayImport[], imports: readonly Import[]): string[] {
  const found: string[] = [];
  // Deepest folder first, so a file is governed by the nearest README.
  const byDepth = [...rules].sort((a, b) => b.dir.length - a.dir.length);
  for (const { file, spec, target } of imports) {
    const rule = byDepth.find((r) => file.startsWith(r.dir + '/'));
    if (rule === undefined) continue;
    const where = `${file} imports ${spec}, not on ${rule.dir}/README.md's "may import" list`;
    if (target === null) {
      if (isBuiltin(spec) || !PACKAGE.test(packageOf(spec))) continue;
      if (!rule.packages.includes(packageOf(spec))) found.push(where);
      continue;
    }
    const inside = (folder: string) => `${target}/`.startsWith(folder.endsWith('/') ? folder : `${folder}/`);
    if (inside(rule.dir) || rule.paths.some((p) => (p.endsWith('/') ? inside(p) : p === target))) continue;
    found.push(where);
  }
  return found;
}

/** Every README of the source folders that states what its folder may import. */
function readmeRules(): MayImport[] {
  const readmes = SOURCE_DIRS.flatMap((d) => [join(ROOT, d), ...sourceFiles(join(ROOT, d)).map((f) => dirname(f))]);
  const rules: MayImport[] = [];
  for (const dir of [...new Set(readmes)].sort()) {
    const readme = join(dir, 'README.md');
    if (!existsSync(readme)) continue;
    const text = mayImportText(readFileSync(readme, 'utf8'));
    if (text !== null) rules.push(parseMayImport(relative(ROOT, dir), text));
  }
  return rules;
}

const rules = readmeRules();

t.test('the READMEs state their lists', async (t) => {
  t.same(
    rules.map((r) => r.dir),
    [
      'cli',
      'config',
      'control',
      'control/store',
      'demo',
      'gateway/control-link',
      'gateway/journal',
      'gateway/proxy',
      'gateway/request',
      'gateway/state',
      'gateway/workers',
      'protocol',
      'runtime',
    ],
  );
  const control = rules.find((r) => r.dir === 'control')!;
  t.ok(control.paths.includes('protocol/') && control.packages.includes('prom-client'), 'folders and packages are read');
  t.notOk(control.paths.includes('gateway/'), 'what a README forbids is not on its list');
  // The shared runtime and the gateway's link to control stand on protocol/ alone.
  const runtime = rules.find((r) => r.dir === 'runtime')!;
  const link = rules.find((r) => r.dir === 'gateway/control-link')!;
  t.same(runtime.paths, ['protocol/'], 'runtime/ may import protocol/ only');
  t.same(link.paths.sort(), ['protocol/', 'runtime/'], 'control-link/ may import protocol/ and runtime/ only');
  const store = rules.find((r) => r.dir === 'control/store')!;
  t.same(
    store.paths.filter((p) => !p.startsWith('control/store/')),
    ['protocol/'],
    'the store may import protocol/ alone, outside itself',
  );
  for (const [rule, file, target] of [
    [runtime, 'runtime/log.ts', 'control/context'],
    [runtime, 'runtime/http-edge.ts', 'gateway/metrics'],
    [runtime, 'runtime/token-bucket.ts', 'config/defaults'],
    [link, 'gateway/control-link/sync-http.ts', 'gateway/state/state'],
    [link, 'gateway/control-link/sync-post.ts', 'gateway/metrics'],
    [store, 'control/store/index.ts', 'control/context'],
    [store, 'control/store/receipts.ts', 'control/receipts/chain-guard'],
  ] as const) {
    t.equal(violations([rule], [{ file, spec: `../${target}`, target }]).length, 1, `${file} → ${target} is refused`);
  }
});

t.test('the code imports only what its folder’s README allows', async (t) => {
  const imports = importsOf(SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir))));
  t.same(violations(rules, imports), []);
});

t.test('an import not on the list fails', async (t) => {
  const readme = [
    '# x/',
    '',
    '## What it may import',
    '',
    '* `protocol/` (the shapes), `../state/`, `../proxy/index.ts` and `zod`.',
    '* Nothing else in the gateway: no `../journal/`. Never `control/`.',
    '',
    '`../journal/` imports this folder; that is not a list.',
  ].join('\n');
  const rule = parseMayImport('gateway/request', mayImportText(readme)!);
  t.same(rule, { dir: 'gateway/request', paths: ['protocol/', 'gateway/state/', 'gateway/proxy/index'], packages: ['zod'] });
  const imp = (spec: string, target: string | null): Import => ({ file: 'gateway/request/handler.ts', spec, target });
  const allowed = [
    imp('../../protocol/errors', 'protocol/errors'),
    imp('../state/state', 'gateway/state/state'),
    imp('../proxy', 'gateway/proxy/index'),
    imp('./route', 'gateway/request/route'),
    imp('zod', null),
    imp('node:http', null),
  ];
  t.same(violations([rule], allowed), [], 'listed folders, files and packages, its own folder and built-ins pass');
  for (const bad of [
    imp('../journal/journal', 'gateway/journal/journal'),
    imp('../proxy/undici', 'gateway/proxy/undici'),
    imp('../../control/store', 'control/store'),
    imp('undici', null),
  ]) {
    t.equal(violations([rule], [bad]).length, 1, `${bad.spec} is refused`);
  }
  t.same(
    violations(
      [rule, { dir: 'gateway', paths: ['gateway/journal/'], packages: [] }],
      [imp('../journal/journal', 'gateway/journal/journal')],
    ),
    ['gateway/request/handler.ts imports ../journal/journal, not on gateway/request/README.md\'s "may import" list'],
    'the nearest README governs',
  );
});
