/**
 * The repository's floors, checked on every source file (the gateway's own folder rules are
 * test/gateway/layout.ts; import cycles are `npm run cycles`):
 *
 * - `protocol/` imports nothing of ours outside itself, and holds what crosses a process
 *   boundary, not what runs one: no Node module that opens sockets, servers, files, processes,
 *   threads or timers (`node:net`, `node:http`, `node:fs`, `node:child_process`, …; a type from
 *   one is fine, TypeScript erases it), and no timers, `fetch` or `process` in its code;
 * - `runtime/` (what every process runs alike: logger, listener edge, instance lock, buckets)
 *   imports only `protocol/` of ours;
 * - `config/` imports only `protocol/`;
 * - the database drivers (`better-sqlite3`, `pg`) are imported only under `control/store/`, the
 *   one place with SQL, and by the throwaway PostgreSQL server's starter (`demo/throwaway-postgres.ts`,
 *   which connects only to see the server up);
 * - `control/store/` sits under every feature and shared module of control: it imports nothing
 *   of control outside itself (what it needs from them comes in through its contract), only
 *   `protocol/`;
 * - the gateway never imports `control/` or `cli/`, and control never imports `gateway/`;
 * - control's feature folders (`admin`, `applications`, `public`, `indexer`, `settler`, `sync`)
 *   never import each other: they meet only through the shared modules (`http/`, `pages/`,
 *   `store/`, `receipts/`, and the top-level `context`, `metrics`, `keys`, `cluster`, `tokens`,
 *   `activity-cursor`, `activity-item`, `limits`, `bootstrap`), and through `server.ts`,
 *   which wires them together. `receipts/` serves no route (the receipts' routes are the
 *   indexer's and the admin API's): it is the chain as this control checked it;
 * - the shared modules import no feature folder (`server.ts` aside), so a feature reaches
 *   another through them neither.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ROOT, importsOf, isTypeOnly, sourceFiles, type Import } from '../fixtures/imports';

const SOURCE_DIRS = ['config', 'protocol', 'runtime', 'control', 'gateway', 'cli', 'demo'];
/** Node modules that run things (sockets, servers, files, processes, threads, timers): protocol/ takes only their types. */
const RUNTIME_BUILTINS = new Set([
  'net',
  'http',
  'https',
  'http2',
  'tls',
  'dgram',
  'dns',
  'fs',
  'fs/promises',
  'child_process',
  'cluster',
  'worker_threads',
  'timers',
  'timers/promises',
  'readline',
  'process',
  'os',
  'stream',
  'stream/promises',
]);
/** What runs in code, read from the text with comments and strings left out. */
const RUNTIME_CALLS = /\b(setTimeout|setInterval|setImmediate|queueMicrotask|fetch|process)\b/;
const FEATURES = new Set(['admin', 'applications', 'public', 'indexer', 'settler', 'sync']);
const DRIVERS = new Set(['better-sqlite3', 'pg']);
/** Outside the store, the one file that may import `pg`: the throwaway server's starter. */
const THROWAWAY_SERVER = 'demo/throwaway-postgres.ts';

/** What wires the feature folders together: the one module outside them that may import them. */
const COMPOSITION_ROOT = 'control/server.ts';

const top = (path: string) => path.split('/')[0]!;
/** Control's feature folder of a repo-relative path, or null (shared modules, or outside control/). */
function featureOf(path: string): string | null {
  const parts = path.split('/');
  return parts[0] === 'control' && parts.length > 2 && FEATURES.has(parts[1]!) ? parts[1]! : null;
}
/** Whether `file` is one of control's shared modules held to importing no feature folder. */
const sharedModule = (file: string) => top(file) === 'control' && featureOf(file) === null && file !== COMPOSITION_ROOT;

/** What breaks the floors in `imports`. */
function check(imports: readonly Import[]): string[] {
  const violations: string[] = [];
  for (const imp of imports) {
    const { file, spec, target } = imp;
    const where = `${file} imports ${spec}`;
    const from = top(file);
    const pkg = spec.split('/')[0]!;
    if (target === null) {
      const driverAllowed = file.startsWith('control/store/') || (file === THROWAWAY_SERVER && pkg === 'pg');
      if (DRIVERS.has(pkg) && !driverAllowed) violations.push(`${where}: database drivers only under control/store/`);
      if (from === 'protocol' && RUNTIME_BUILTINS.has(spec.replace(/^node:/, '')) && imp.typeOnly !== true)
        violations.push(`${where}: protocol/ takes only types from a module that runs things`);
      continue;
    }
    const to = top(target);
    if (from === 'protocol' && to !== 'protocol') violations.push(`${where}: protocol/ imports nothing of ours`);
    if (from === 'runtime' && to !== 'runtime' && to !== 'protocol') violations.push(`${where}: runtime/ imports only protocol/`);
    if (from === 'config' && to !== 'config' && to !== 'protocol') violations.push(`${where}: config/ imports only protocol/`);
    if (from === 'gateway' && (to === 'control' || to === 'cli')) violations.push(`${where}: the gateway never imports control/ or cli/`);
    if (from === 'control' && to === 'gateway') violations.push(`${where}: control never imports gateway/`);
    if (file.startsWith('control/store/') && to !== 'protocol' && !target.startsWith('control/store/'))
      violations.push(`${where}: the store imports nothing of control outside itself, only protocol/`);
    const a = featureOf(file);
    const b = featureOf(target);
    if (a !== null && b !== null && a !== b) violations.push(`${where}: feature folders meet only through shared modules`);
    if (b !== null && sharedModule(file)) violations.push(`${where}: a shared module imports no feature folder`);
  }
  return violations;
}

/** What `protocol/`'s code runs in `text` (a file's source): timers, `fetch`, `process`, outside comments and strings. */
function runtimeCalls(file: string, text: string): string[] {
  const code = text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/(['"`])(?:\\.|(?!\1)[^\\\n])*\1/g, "''");
  return code
    .split('\n')
    .filter((line) => RUNTIME_CALLS.test(line))
    .map((line) => `${file} runs ${RUNTIME_CALLS.exec(line)![1]!}: protocol/ holds shapes and rules, no timers or process state`);
}

const imports = importsOf(SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir))));
const protocolFiles = sourceFiles(join(ROOT, 'protocol'));

t.test('every source file keeps to the floors', async (t) => {
  t.ok(imports.length > 1000, `${imports.length} imports read`);
  t.same(check(imports), []);
});

t.test('protocol/ runs no timers and touches no process state', async (t) => {
  t.ok(protocolFiles.length > 40, `${protocolFiles.length} protocol files read`);
  t.same(
    protocolFiles.flatMap((f) => runtimeCalls(relative(ROOT, f), readFileSync(f, 'utf8'))),
    [],
  );
  // The reader tells a type import from one that loads the module.
  const of = (file: string, spec: string) => imports.find((i) => i.file === file && i.spec === spec);
  t.equal(of('protocol/keys.ts', 'node:crypto')?.typeOnly, false, 'a value import loads the module');
  t.equal(of('runtime/http.ts', 'node:http')?.typeOnly, true, '`import type` loads nothing');
  t.equal(of('gateway/proxy/index.ts', './contract')?.typeOnly, true, 'nor does `export type { … }` over several lines');
  t.equal(of('gateway/startup.ts', 'node:http')?.typeOnly, false, 'a value beside types loads the module');
  t.ok(isTypeOnly('import { type Server, type Socket } from'), 'braces of types only load nothing');
  t.notOk(isTypeOnly('import { type Server, createServer } from'), 'braces with a value load the module');
});

t.test('protocol/ refuses what runs, in imports and in code', async (t) => {
  const imp = (spec: string, typeOnly: boolean): Import => ({ file: 'protocol/x.ts', spec, target: null, typeOnly });
  for (const spec of ['node:net', 'node:http', 'node:https', 'node:fs', 'fs', 'node:child_process', 'node:dgram', 'node:timers']) {
    t.equal(check([imp(spec, false)]).length, 1, `${spec} is refused`);
  }
  for (const ok of [imp('node:http', true), imp('node:crypto', false), imp('zod', false)]) {
    t.same(check([ok]), [], `${ok.spec}${ok.typeOnly === true ? ' (types)' : ''} is allowed`);
  }
  const bad = [
    'const t = setTimeout(() => {}, 10);',
    'export const port = Number(process.env.PORT);',
    'export async function get(u: string) { return fetch(u); }',
    'setImmediate(run);',
  ];
  for (const source of bad) t.equal(runtimeCalls('protocol/x.ts', source).length, 1, source);
  const fine = ['/** Built once per process. */', '// setTimeout is not ours', "export const NAME = 'process';", 'const processed = 1;'];
  for (const source of fine) t.same(runtimeCalls('protocol/x.ts', source), [], source);
});

t.test('each rule catches what it forbids', async (t) => {
  const cases: [string, Import][] = [
    ['protocol → control', { file: 'protocol/keys.ts', spec: '../control/store/db', target: 'control/store/db' }],
    ['protocol → runtime', { file: 'protocol/errors.ts', spec: '../runtime/http', target: 'runtime/http' }],
    [
      'protocol → gateway’s link to control',
      { file: 'protocol/snapshot.ts', spec: '../gateway/control-link/sync-http', target: 'gateway/control-link/sync-http' },
    ],
    ['runtime → control', { file: 'runtime/log.ts', spec: '../control/context', target: 'control/context' }],
    ['runtime → gateway', { file: 'runtime/http-edge.ts', spec: '../gateway/metrics', target: 'gateway/metrics' }],
    ['runtime → config', { file: 'runtime/token-bucket.ts', spec: '../config/defaults', target: 'config/defaults' }],
    ['runtime → cli', { file: 'runtime/instance-lock.ts', spec: '../cli/exit-codes', target: 'cli/exit-codes' }],
    ['config → cli', { file: 'config/load.ts', spec: '../cli/deps', target: 'cli/deps' }],
    ['a driver outside the store', { file: 'control/public/reads.ts', spec: 'better-sqlite3', target: null }],
    ['pg outside the store', { file: 'cli/commands/status.ts', spec: 'pg', target: null }],
    ['better-sqlite3 in the throwaway server', { file: THROWAWAY_SERVER, spec: 'better-sqlite3', target: null }],
    ['pg elsewhere in demo/', { file: 'demo/cluster.ts', spec: 'pg', target: null }],
    ['gateway → control', { file: 'gateway/main.ts', spec: '../control/store', target: 'control/store' }],
    ['control → gateway', { file: 'control/server.ts', spec: '../gateway/main', target: 'gateway/main' }],
    ['a feature → another feature', { file: 'control/admin/keys.ts', spec: '../public/cache', target: 'control/public/cache' }],
    [
      'a feature → another feature’s pages',
      { file: 'control/indexer/server.ts', spec: '../public/pages/routes', target: 'control/public/pages/routes' },
    ],
    ['a shared folder → a feature', { file: 'control/pages/respond.ts', spec: '../public/status', target: 'control/public/status' }],
    ['a top-level module → a feature', { file: 'control/keys.ts', spec: './indexer/stats', target: 'control/indexer/stats' }],
    ['the store → a top-level module', { file: 'control/store/index.ts', spec: '../context', target: 'control/context' }],
    [
      'the store → receipts',
      { file: 'control/store/receipts.ts', spec: '../receipts/chain-guard', target: 'control/receipts/chain-guard' },
    ],
    ['PostgreSQL’s store → a top-level module', { file: 'control/store/pg/store.ts', spec: '../../keys', target: 'control/keys' }],
    ['the store → runtime', { file: 'control/store/pg/store.ts', spec: '../../../runtime/log', target: 'runtime/log' }],
  ];
  for (const [name, imp] of cases) t.equal(check([imp]).length, 1, name);
  for (const ok of [
    { file: 'control/admin/keys.ts', spec: '../http/router', target: 'control/http/router' },
    { file: 'control/admin/keys.ts', spec: '../store', target: 'control/store' },
    { file: 'control/public/server.ts', spec: '../context', target: 'control/context' },
    { file: 'control/indexer/server.ts', spec: '../pages/respond', target: 'control/pages/respond' },
    { file: 'control/public/pages/routes.ts', spec: './feeds', target: 'control/public/pages/feeds' },
    { file: 'control/server.ts', spec: './indexer/server', target: 'control/indexer/server' },
    { file: 'control/store/pg/conn.ts', spec: 'pg', target: null },
    { file: 'control/store/sql/keys.ts', spec: '../keys', target: 'control/store/keys' },
    { file: 'control/store/receipts-audit.ts', spec: '../../protocol/opaque-ids', target: 'protocol/opaque-ids' },
    { file: 'runtime/log.ts', spec: '../protocol/keys', target: 'protocol/keys' },
    { file: 'runtime/instance-lock.ts', spec: 'node:net', target: null },
    { file: 'control/http/serve.ts', spec: '../../runtime/http-edge', target: 'runtime/http-edge' },
    { file: 'gateway/startup.ts', spec: '../runtime/http-edge', target: 'runtime/http-edge' },
  ]) {
    t.same(check([ok]), [], `${ok.file} → ${ok.spec} is allowed`);
  }
});
