/**
 * The repository's floors, checked on every source file (the gateway's own folder rules are
 * test/gateway/layout.ts; import cycles are `npm run cycles`):
 *
 * - `protocol/` imports nothing of ours outside itself;
 * - `config/` imports only `protocol/`;
 * - the database drivers (`better-sqlite3`, `pg`) are imported only under `control/store/`, the
 *   one place with SQL;
 * - the gateway never imports `control/` or `cli/`, and control never imports `gateway/`;
 * - control's feature folders (`admin`, `applications`, `public`, `indexer`, `settler`,
 *   `receipts`, `sync`) reach each other only through the shared modules (`http/`, `pages/`, `store/`,
 *   and the top-level `context`, `server`, `metrics`, `keys`, `cluster`, `tokens`, `ids`,
 *   `activity-cursor`, `limits`,
 *   `bootstrap`). The edges that predate the rule are listed in `KNOWN_FEATURE_EDGES`: a new edge
 *   fails, and so does a listed edge that no longer exists (the list only shrinks).
 */
import { join } from 'node:path';
import t from 'tap';
import { ROOT, importsOf, sourceFiles, type Import } from '../fixtures/imports';

const SOURCE_DIRS = ['config', 'protocol', 'control', 'gateway', 'cli', 'demo'];
const FEATURES = new Set(['admin', 'applications', 'public', 'indexer', 'settler', 'receipts', 'sync']);
const DRIVERS = new Set(['better-sqlite3', 'pg']);

/** Edges between control's feature folders that predate the rule, to be folded into shared modules. */
const KNOWN_FEATURE_EDGES = new Set([
  'control/indexer/server.ts -> control/public/pages/routes',
  'control/public/pages/routes.ts -> control/indexer/stats',
]);

const top = (path: string) => path.split('/')[0]!;
/** Control's feature folder of a repo-relative path, or null (shared modules, or outside control/). */
function featureOf(path: string): string | null {
  const parts = path.split('/');
  return parts[0] === 'control' && parts.length > 2 && FEATURES.has(parts[1]!) ? parts[1]! : null;
}

/** What breaks the floors in `imports`, and the feature edges seen (`file -> target`). */
function check(imports: readonly Import[]): { violations: string[]; featureEdges: string[] } {
  const violations: string[] = [];
  const featureEdges: string[] = [];
  for (const { file, spec, target } of imports) {
    const where = `${file} imports ${spec}`;
    const from = top(file);
    const pkg = spec.split('/')[0]!;
    if (target === null) {
      if (DRIVERS.has(pkg) && !file.startsWith('control/store/')) violations.push(`${where}: database drivers only under control/store/`);
      continue;
    }
    const to = top(target);
    if (from === 'protocol' && to !== 'protocol') violations.push(`${where}: protocol/ imports nothing of ours`);
    if (from === 'config' && to !== 'config' && to !== 'protocol') violations.push(`${where}: config/ imports only protocol/`);
    if (from === 'gateway' && (to === 'control' || to === 'cli')) violations.push(`${where}: the gateway never imports control/ or cli/`);
    if (from === 'control' && to === 'gateway') violations.push(`${where}: control never imports gateway/`);
    const a = featureOf(file);
    const b = featureOf(target);
    if (a !== null && b !== null && a !== b) featureEdges.push(`${file} -> ${target}`);
  }
  return { violations, featureEdges };
}

const imports = importsOf(SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir))));

t.test('every source file keeps to the floors', async (t) => {
  t.ok(imports.length > 1000, `${imports.length} imports read`);
  t.same(check(imports).violations, []);
});

t.test('control’s feature folders meet only through shared modules (known edges only shrink)', async (t) => {
  const edges = [...new Set(check(imports).featureEdges)].sort();
  t.same(
    edges.filter((e) => !KNOWN_FEATURE_EDGES.has(e)),
    [],
    'no new edge between feature folders: go through http/, store/ or a top-level module',
  );
  t.same(
    [...KNOWN_FEATURE_EDGES].filter((e) => !edges.includes(e)),
    [],
    'an edge that is gone leaves KNOWN_FEATURE_EDGES',
  );
});

t.test('each rule catches what it forbids', async (t) => {
  const cases: [string, Import][] = [
    ['protocol → control', { file: 'protocol/keys.ts', spec: '../control/store/db', target: 'control/store/db' }],
    ['config → cli', { file: 'config/load.ts', spec: '../cli/deps', target: 'cli/deps' }],
    ['a driver outside the store', { file: 'control/public/reads.ts', spec: 'better-sqlite3', target: null }],
    ['pg outside the store', { file: 'cli/commands/status.ts', spec: 'pg', target: null }],
    ['gateway → control', { file: 'gateway/main.ts', spec: '../control/store', target: 'control/store' }],
    ['control → gateway', { file: 'control/server.ts', spec: '../gateway/main', target: 'gateway/main' }],
  ];
  for (const [name, imp] of cases) t.equal(check([imp]).violations.length, 1, name);
  t.same(
    check([{ file: 'control/admin/keys.ts', spec: '../public/cache', target: 'control/public/cache' }]).featureEdges,
    ['control/admin/keys.ts -> control/public/cache'],
    'an edge between two feature folders is seen',
  );
  for (const ok of [
    { file: 'control/admin/keys.ts', spec: '../http/router', target: 'control/http/router' },
    { file: 'control/admin/keys.ts', spec: '../store', target: 'control/store' },
    { file: 'control/public/server.ts', spec: '../context', target: 'control/context' },
    { file: 'control/store/pg/conn.ts', spec: 'pg', target: null },
  ]) {
    const seen = check([ok]);
    t.same([...seen.violations, ...seen.featureEdges], [], `${ok.file} → ${ok.spec} is allowed`);
  }
});
