/**
 * Every `docs/design.md §n` or `§n.m` the repository cites exists in docs/design.md: `§n` is a
 * `## n.` heading, and `§n.m` the m-th item of that section's numbered list. A citation whose
 * target was renumbered or never written fails here, so the code's most used cross-reference
 * always leads somewhere; and no citation names a design document outside the repository.
 */
import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const DESIGN = join(ROOT, 'docs', 'design.md');
/** Folders holding the repository's own sources and docs (not dependencies or build output). */
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage', '.tap', 'results']);
const CITED = /\.(ts|js|mjs|md)$/;

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, out);
    else if (CITED.test(name)) out.push(path);
  }
  return out;
}

/** The sections of docs/design.md: number → the numbers of its list items. */
function sections(markdown: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let current: Set<string> | null = null;
  for (const line of markdown.split('\n')) {
    const heading = /^## (\d+)\. /.exec(line);
    if (heading) out.set(heading[1]!, (current = new Set()));
    else if (/^## /.test(line)) current = null;
    else {
      const item = /^(\d+)\. /.exec(line);
      if (item && current) current.add(item[1]!);
    }
  }
  return out;
}

t.test('every docs/design.md § the repository cites is in docs/design.md', async (t) => {
  const design = sections(readFileSync(DESIGN, 'utf8'));
  t.ok(design.size >= 12, 'docs/design.md has its twelve sections');
  const missing: string[] = [];
  const outside: string[] = [];
  let citations = 0;
  for (const file of files(ROOT)) {
    if (file === DESIGN || file === __filename) continue;
    const text = readFileSync(file, 'utf8');
    // "docs/design.md §3, §7" cites §7 too: every § of a citation's list.
    for (const match of text.matchAll(/docs\/design\.md (§\d+(?:\.\d+)?(?:(?:,| and| or|,? and) §\d+(?:\.\d+)?)*)/g)) {
      for (const cited of match[1]!.matchAll(/§(\d+)(?:\.(\d+))?/g)) {
        citations++;
        const [, section, item] = cited;
        const found = design.get(section!);
        if (found === undefined || (item !== undefined && !found.has(item)))
          missing.push(`${relative(ROOT, file)}: docs/design.md §${section}${item === undefined ? '' : `.${item}`}`);
      }
    }
    if (/\bDESIGN §/.test(text)) outside.push(relative(ROOT, file));
  }
  t.ok(citations > 0, `the repository cites the design (${citations} citations)`);
  t.same(missing, [], 'each cited section or item exists');
  t.same(outside, [], 'no citation of a DESIGN document outside the repository');
});

t.test('a citation of a section or item that does not exist is found', async (t) => {
  const design = sections('## 3. Rules\n\n1. one\n2. two\n\n## 4. Sync\n\ntext\n');
  t.same([...design.keys()], ['3', '4']);
  t.same([...design.get('3')!], ['1', '2'], 'the items of section 3');
  t.equal(design.get('4')!.has('1'), false, '§4.1 does not exist');
  t.equal(design.get('5'), undefined, '§5 does not exist');
});
