// The gateway's folders import only what gateway/README.md (and each folder's README) allows:
// state/ and journal/ reach control only through control-link/, which imports no gateway folder;
// proxy/ imports no gateway folder (the failure kinds and header filters are its own), and the
// rest of the gateway imports only its index.ts; workers/ imports only the top level.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ROOT, importsOf, sourceFiles, type Import } from '../fixtures/imports';

const GATEWAY = join(ROOT, 'gateway');
/** Top-level gateway folders with rules of their own. */
const FOLDERS = ['request', 'state', 'journal', 'proxy', 'control-link', 'workers'] as const;

/** The gateway folder a repo-relative path is in ('' for gateway/'s own files), or null outside gateway/. */
function folderOf(path: string): string | null {
  const parts = path.split('/');
  if (parts[0] !== 'gateway') return null;
  return parts.length > 2 ? parts[1]! : '';
}

/** What breaks the rules in `imports`; empty when none. */
function violations(imports: readonly Import[]): string[] {
  const found: string[] = [];
  for (const { file, spec, target } of imports) {
    const from = folderOf(file)!;
    const where = `${file} imports ${spec}`;
    if (target !== null && /^(control|cli)(\/|$)/.test(target)) found.push(`${where}: the gateway never imports control/ or cli/`);
    if ((spec === 'http-proxy' || spec.startsWith('http-proxy/')) && file !== 'gateway/proxy/http-proxy.ts')
      found.push(`${where}: only proxy/http-proxy.ts imports http-proxy`);
    if ((spec === 'undici' || spec.startsWith('undici/')) && !/^gateway\/proxy\/undici[^/]*\.ts$/.test(file))
      found.push(`${where}: only proxy/undici*.ts import undici`);
    if (target === null) continue;
    const to = folderOf(target);
    if (to === null || to === from) continue;
    if (to === 'proxy' && target !== 'gateway/proxy/index') found.push(`${where}: outside proxy/, only proxy/index.ts is imported`);
    if ((from === 'state' || from === 'journal') && to !== 'control-link')
      found.push(`${where}: ${from}/ imports no other gateway folder but control-link/`);
    if (to === 'control-link' && from !== '' && from !== 'state' && from !== 'journal')
      found.push(`${where}: only state/, journal/ and the top level talk to control`);
    if (from === 'proxy' || from === 'control-link') found.push(`${where}: ${from}/ imports no other gateway folder`);
    if (from === 'workers' && to !== '') found.push(`${where}: workers/ imports no other gateway folder, only the top level`);
  }
  return found;
}

const files = sourceFiles(GATEWAY);
const imports = importsOf(files);

t.test('the gateway has its six folders, each with a README, and their files are read', async (t) => {
  for (const folder of FOLDERS) {
    t.ok(
      files.some((f) => relative(GATEWAY, f).startsWith(`${folder}/`)),
      `${folder}/ has source files`,
    );
    t.ok(readdirSync(join(GATEWAY, folder)).includes('README.md'), `${folder}/README.md exists`);
  }
  // The reader sees every form of import the gateway uses.
  t.ok(
    imports.some((i) => i.spec === 'http-proxy'),
    'the http-proxy import is seen',
  );
  t.ok(
    imports.some((i) => i.target === 'gateway/proxy/index' && i.file === 'gateway/request/handler.ts'),
    'relative imports are resolved',
  );
});

t.test('every gateway file keeps to the import rules', async (t) => {
  t.same(violations(imports), []);
});

t.test('each rule catches what it forbids', async (t) => {
  const cases: [string, Import][] = [
    ['control/', { file: 'gateway/request/handler.ts', spec: '../../control/store/db', target: 'control/store/db' }],
    ['http-proxy', { file: 'gateway/main.ts', spec: 'http-proxy', target: null }],
    ['undici', { file: 'gateway/state/sync-client.ts', spec: 'undici', target: null }],
    ['an engine file', { file: 'gateway/request/handler.ts', spec: '../proxy/undici', target: 'gateway/proxy/undici' }],
    ['state/ → request/', { file: 'gateway/state/state.ts', spec: '../request/limiter', target: 'gateway/request/limiter' }],
    ['journal/ → top level', { file: 'gateway/journal/shipper.ts', spec: '../metrics', target: 'gateway/metrics' }],
    ['proxy/ → state/', { file: 'gateway/proxy/call.ts', spec: '../state/state', target: 'gateway/state/state' }],
    ['proxy/ → request/', { file: 'gateway/proxy/call.ts', spec: '../request/classify', target: 'gateway/request/classify' }],
    ['proxy/ → top level', { file: 'gateway/proxy/undici.ts', spec: '../metrics', target: 'gateway/metrics' }],
    ['control-link/ → state/', { file: 'gateway/control-link/sync-http.ts', spec: '../state/state', target: 'gateway/state/state' }],
    [
      'control-link/ → journal/',
      { file: 'gateway/control-link/sync-post.ts', spec: '../journal/journal', target: 'gateway/journal/journal' },
    ],
    ['control-link/ → top level', { file: 'gateway/control-link/sync-http.ts', spec: '../metrics', target: 'gateway/metrics' }],
    [
      'request/ → control-link/',
      { file: 'gateway/request/handler.ts', spec: '../control-link/sync-http', target: 'gateway/control-link/sync-http' },
    ],
    ['undici in control-link/', { file: 'gateway/control-link/sync-post.ts', spec: 'undici', target: null }],
    ['workers/ → state/', { file: 'gateway/workers/worker.ts', spec: '../state/state', target: 'gateway/state/state' }],
  ];
  for (const [name, imp] of cases) t.equal(violations([imp]).length, 1, name);
  for (const ok of [
    { file: 'gateway/state/sync-client.ts', spec: '../control-link/sync-post', target: 'gateway/control-link/sync-post' },
    { file: 'gateway/journal/shipper.ts', spec: '../control-link/sync-http', target: 'gateway/control-link/sync-http' },
    { file: 'gateway/main.ts', spec: './control-link/sync-http', target: 'gateway/control-link/sync-http' },
    { file: 'gateway/control-link/sync-post.ts', spec: './sync-http', target: 'gateway/control-link/sync-http' },
    { file: 'gateway/control-link/sync-http.ts', spec: '../../runtime/log', target: 'runtime/log' },
    { file: 'gateway/request/handler.ts', spec: '../proxy/index', target: 'gateway/proxy/index' },
    { file: 'gateway/workers/worker.ts', spec: '../main', target: 'gateway/main' },
  ]) {
    t.same(violations([ok]), [], `${ok.file} → ${ok.spec} is allowed`);
  }
});
