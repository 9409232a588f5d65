/**
 * bench/ loads the project's modules only through `bench/lib/internals.js`, whose type map names
 * each module once with the type of its TypeScript source, so `npm run typecheck:bench` (in
 * `npm run lint`) sees every internal a bench uses. Here: each key of that map is the path it
 * `import()`s and a source that exists, and no other bench file requires by a computed path.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ROOT } from '../fixtures/imports';

const BENCH = join(ROOT, 'bench');
const INTERNALS = join(BENCH, 'lib', 'internals.js');

/** The `'key': typeof import('../../path')` entries of the map, and the lines of it that are neither. */
function entriesOf(text: string): { key: string; path: string }[] {
  const map = /@typedef \{\{([\s\S]*?)\}\} Internals/.exec(text)?.[1] ?? '';
  return [...map.matchAll(/'([^']+)':\s*typeof import\('\.\.\/\.\.\/([^']+)'\)/g)].map((m) => ({ key: m[1]!, path: m[2]! }));
}

/** `require(` calls whose argument is not a string literal, as `file:line`. */
function computedRequires(files: readonly string[]): string[] {
  return files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (/\brequire\(\s*[^'"\s]/.test(line) ? [`${relative(ROOT, file)}:${i + 1}`] : [])),
  );
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'results' ? [] : jsFiles(path);
    return e.name.endsWith('.js') ? [path] : [];
  });
}

t.test('each internal is named once, as the source it is typed from', async (t) => {
  const entries = entriesOf(readFileSync(INTERNALS, 'utf8'));
  t.ok(entries.length >= 10, `${entries.length} modules in the map`);
  for (const { key, path } of entries) {
    t.equal(path, key, `${key}: typed from the same path`);
    t.ok(existsSync(join(ROOT, `${key}.ts`)), `${key}.ts exists`);
  }
  t.same(
    entriesOf("@typedef {{\n *   'a/b': typeof import('../../a/c'),\n * }} Internals"),
    [{ key: 'a/b', path: 'a/c' }],
    'a mismatch is read',
  );
});

t.test('no bench requires a module by a computed path but the internals loader', async (t) => {
  const files = jsFiles(BENCH);
  t.ok(files.length > 20, `${files.length} bench files`);
  t.same(computedRequires(files.filter((f) => f !== INTERNALS)), [], 'every other require names its module literally');
  t.match(computedRequires([INTERNALS]), [/^bench\/lib\/internals\.js:\d+$/], 'the loader’s own require is seen');
});
