/**
 * Every numbered section the repository cites exists, in a document of the repository: `§n` is a
 * `## n.` heading of the cited document, and `§n.m` the m-th item of that section's numbered
 * list. A citation names its document before the § (`docs/design.md §3.5`, `design.md §9` from
 * inside `docs/`), on the same line or the next one (`docs/design.md` at the end of a comment
 * line, `§3.5` at the start of the next), and a list of §s may run on over lines too. A citation
 * whose target was renumbered or never written fails here, so the code's most used
 * cross-reference always leads somewhere; and no citation names a document outside the
 * repository (`spec §1`, `DESIGN §3`). Inside docs/design.md, a bare `§n` cites docs/design.md.
 */
import t from 'tap';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

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

/** The sections of a document: number → the numbers of its list items. */
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

/** A line break and the comment leader after it (` * `, `// `) read as one space. */
function joinLines(text: string): string {
  return text.replace(/[ \t]*\r?\n[ \t]*(?:\/\/+|\*(?!\/))?[ \t]*/g, ' ');
}

interface Citation {
  /** The document as written: a path ending in `.md`, or a name (`spec`, `DESIGN`). */
  doc: string;
  section: string;
  item: string | undefined;
}

const SECTION = String.raw`§\d+(?:\.\d+)?`;
/** A document, then one § or a list of them ("§3, §7", "§3 and §7"). */
const CITATION = new RegExp(String.raw`([\w./-]+\.md|\bspec|\bDESIGN) (${SECTION}(?:(?:,| and| or|, and) ${SECTION})*)`, 'g');
/** A bare § list, for a document's citations of itself; not after a number (`RFC 9162 §2.1`). */
const SELF = new RegExp(String.raw`(?<![\w.]\s?)(${SECTION}(?:(?:,| and| or|, and) ${SECTION})*)`, 'g');

function each(list: string, doc: string): Citation[] {
  return [...list.matchAll(/§(\d+)(?:\.(\d+))?/g)].map(([, section, item]) => ({ doc, section: section!, item }));
}

/** Every citation in `text`; with `self`, bare §s too, as citations of `self`. */
function citations(text: string, self?: string): Citation[] {
  const joined = joinLines(text);
  const out = [...joined.matchAll(CITATION)].flatMap((m) => each(m[2]!, m[1]!));
  if (self !== undefined) for (const m of joined.matchAll(SELF)) out.push(...each(m[1]!, self));
  return out;
}

/** What is wrong with each citation of `file`: a document outside the repository, or no such § in it. */
function problems(file: string, text: string, read: (path: string) => string | undefined, self?: string): string[] {
  const out: string[] = [];
  const parsed = new Map<string, Map<string, Set<string>> | null>();
  for (const cited of citations(text, self)) {
    const where = `${relative(ROOT, file)}: ${cited.doc} §${cited.section}${cited.item === undefined ? '' : `.${cited.item}`}`;
    // A path is the citing file's neighbour or relative to the repository's root.
    const path = /\.md$/.test(cited.doc)
      ? [join(dirname(file), cited.doc), join(ROOT, cited.doc)].find((p) => read(p) !== undefined)
      : undefined;
    if (path === undefined) {
      out.push(`${where}: not a document in the repository`);
      continue;
    }
    if (!parsed.has(path)) parsed.set(path, sections(read(path)!));
    const found = parsed.get(path)!.get(cited.section);
    if (found === undefined || (cited.item !== undefined && !found.has(cited.item))) out.push(`${where}: no such section or item`);
  }
  return out;
}

function readRepo(path: string): string | undefined {
  return path.startsWith(ROOT) && existsSync(path) && statSync(path).isFile() ? readFileSync(path, 'utf8') : undefined;
}

t.test('every § the repository cites is in a document of the repository', async (t) => {
  const design = sections(readFileSync(DESIGN, 'utf8'));
  t.ok(design.size >= 14, `docs/design.md has its fourteen sections (${design.size})`);
  let count = 0;
  const wrong: string[] = [];
  for (const file of files(ROOT)) {
    if (file === __filename) continue;
    const text = readFileSync(file, 'utf8');
    const self = file === DESIGN ? 'docs/design.md' : undefined;
    count += citations(text, self).length;
    wrong.push(...problems(file, text, readRepo, self));
  }
  t.ok(count > 100, `the repository cites the design (${count} citations)`);
  t.same(wrong, [], 'each citation names a document of the repository and a section or item it has');
});

t.test('docs/design.md has no section named for a release', async (t) => {
  const headings = readFileSync(DESIGN, 'utf8')
    .split('\n')
    .filter((line) => /^## /.test(line));
  t.same(
    headings.filter((h) => /release|version \d|\b20\d\d\b/i.test(h)),
    [],
    'sections are named by topic',
  );
});

t.test('a citation of a section or item that does not exist is found', async (t) => {
  const design = sections('## 3. Rules\n\n1. one\n2. two\n\n## 4. Sync\n\ntext\n');
  t.same([...design.keys()], ['3', '4']);
  t.same([...design.get('3')!], ['1', '2'], 'the items of section 3');
  t.equal(design.get('4')!.has('1'), false, '§4.1 does not exist');
  t.equal(design.get('5'), undefined, '§5 does not exist');

  const docs: Record<string, string> = { [DESIGN]: '## 3. Rules\n\n1. one\n2. two\n\n## 4. Sync\n\ntext\n' };
  const read = (path: string) => docs[path];
  const file = join(ROOT, 'x', 'y.ts');
  t.same(problems(file, '// docs/design.md §3.2, §4', read), [], 'a list of existing sections');
  t.same(problems(file, '// (docs/design.md §4.1)', read), ['x/y.ts: docs/design.md §4.1: no such section or item']);
  t.same(
    problems(file, '/**\n * limits (docs/design.md\n * §3.3; IETF draft 11)\n */', read),
    ['x/y.ts: docs/design.md §3.3: no such section or item'],
    'a citation split across two comment lines',
  );
  t.same(
    problems(file, '/**\n * edge cases (docs/design.md §3,\n * §5): requests\n */', read),
    ['x/y.ts: docs/design.md §5: no such section or item'],
    'a list that runs on over the next line',
  );
  t.same(
    problems(file, '// Review priority (spec §1: agents first), UA filter (spec §4 rule 4, §5.6)', read),
    ['x/y.ts: spec §1: not a document in the repository', 'x/y.ts: spec §4: not a document in the repository'],
    'a spec outside the repository',
  );
  t.same(problems(file, '/**\n * limits (DESIGN\n * §3.5)\n */', read), ['x/y.ts: DESIGN §3.5: not a document in the repository']);
  t.same(problems(file, '// docs/missing.md §1', read), ['x/y.ts: docs/missing.md §1: not a document in the repository']);
  t.same(problems(join(ROOT, 'docs', 'errors.md'), 'see [design.md §3](design.md)', read), [], 'a neighbour, from inside docs/');
  t.same(
    problems(DESIGN, 'one record (§3.2) per call; RFC 9162 §2.1 trees; (§7)', read, 'docs/design.md'),
    ['docs/design.md: docs/design.md §7: no such section or item'],
    'the design citing itself, and not an RFC',
  );
});
