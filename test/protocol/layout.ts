/**
 * The repository's floors, checked on every source file (the gateway's own folder rules are
 * test/gateway/layout.ts; import cycles are `npm run cycles`):
 *
 * - `protocol/` imports nothing of ours outside itself;
 * - `config/` imports only `protocol/`;
 * - the database drivers (`better-sqlite3`, `pg`) are imported only under `control/store/`, the
 *   one place with SQL;
 * - the gateway never imports `control/` or `cli/`, and control never imports `gateway/`;
 * - control's feature folders (`admin`, `applications`, `public`, `indexer`, `settler`, `sync`)
 *   never import each other: they meet only through the shared modules (`http/`, `pages/`,
 *   `store/`, `receipts/`, and the top-level `context`, `metrics`, `keys`, `cluster`, `tokens`,
 *   `ids`, `activity-cursor`, `activity-item`, `limits`, `bootstrap`), and through `server.ts`,
 *   which wires them together. `receipts/` serves no route (the receipts' routes are the
 *   indexer's and the admin API's): it is the signing key file, the batch trees and their
 *   hasher thread, which the store uses;
 * - the shared modules import no feature folder (`server.ts` aside), so a feature reaches
 *   another through them neither.
 */
import { join } from 'node:path';
import t from 'tap';
import { ROOT, importsOf, sourceFiles, type Import } from '../fixtures/imports';

const SOURCE_DIRS = ['config', 'protocol', 'control', 'gateway', 'cli', 'demo'];
const FEATURES = new Set(['admin', 'applications', 'public', 'indexer', 'settler', 'sync']);
const DRIVERS = new Set(['better-sqlite3', 'pg']);

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
    if (a !== null && b !== null && a !== b) violations.push(`${where}: feature folders meet only through shared modules`);
    if (b !== null && sharedModule(file)) violations.push(`${where}: a shared module imports no feature folder`);
  }
  return violations;
}

const imports = importsOf(SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir))));

t.test('every source file keeps to the floors', async (t) => {
  t.ok(imports.length > 1000, `${imports.length} imports read`);
  t.same(check(imports), []);
});

t.test('each rule catches what it forbids', async (t) => {
  const cases: [string, Import][] = [
    ['protocol → control', { file: 'protocol/keys.ts', spec: '../control/store/db', target: 'control/store/db' }],
    ['config → cli', { file: 'config/load.ts', spec: '../cli/deps', target: 'cli/deps' }],
    ['a driver outside the store', { file: 'control/public/reads.ts', spec: 'better-sqlite3', target: null }],
    ['pg outside the store', { file: 'cli/commands/status.ts', spec: 'pg', target: null }],
    ['gateway → control', { file: 'gateway/main.ts', spec: '../control/store', target: 'control/store' }],
    ['control → gateway', { file: 'control/server.ts', spec: '../gateway/main', target: 'gateway/main' }],
    ['a feature → another feature', { file: 'control/admin/keys.ts', spec: '../public/cache', target: 'control/public/cache' }],
    [
      'a feature → another feature’s pages',
      { file: 'control/indexer/server.ts', spec: '../public/pages/routes', target: 'control/public/pages/routes' },
    ],
    ['a shared folder → a feature', { file: 'control/pages/respond.ts', spec: '../public/status', target: 'control/public/status' }],
    ['a top-level module → a feature', { file: 'control/ids.ts', spec: './indexer/stats', target: 'control/indexer/stats' }],
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
  ]) {
    t.same(check([ok]), [], `${ok.file} → ${ok.spec} is allowed`);
  }
});
