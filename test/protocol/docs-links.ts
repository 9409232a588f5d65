/**
 * The README is the front door: at most 300 lines, it links every guide under `docs/`, and its
 * test command is the one `.ci/run` runs. Every relative link in the README and the guides
 * leads to a file of the repository and, with a `#fragment`, to a heading of that file, so a
 * section moved between guides cannot leave a dead link behind.
 */
import t from 'tap';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const README = join(ROOT, 'README.md');
const DOCS = join(ROOT, 'docs');
const MAX_README_LINES = 300;

/** Markdown outside fenced code blocks, where links and headings are. */
function prose(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .filter((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced && !line.startsWith('```');
    })
    .join('\n');
}

/** GitHub's anchors for the headings of a document: lower case, punctuation dropped, spaces as dashes. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, text] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = text!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The relative links of a document: `[text](target)`, web addresses left out. */
function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:/i.test(target));
}

/** What is wrong with each link of `file`: no such file, or no such heading in it. */
function deadLinks(file: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const out: string[] = [];
  for (const link of links(markdown)) {
    const [path, fragment] = link.split('#', 2) as [string, string | undefined];
    const target = path === '' ? file : resolve(dirname(file), path);
    const text = read(target);
    if (text === undefined && !(existsSync(target) && statSync(target).isDirectory()))
      out.push(`${relative(ROOT, file)}: ${link}: no such file`);
    else if (fragment !== undefined && (text === undefined || !anchors(text).has(fragment)))
      out.push(`${relative(ROOT, file)}: ${link}: no such heading`);
  }
  return out;
}

function readRepo(path: string): string | undefined {
  return existsSync(path) && statSync(path).isFile() ? readFileSync(path, 'utf8') : undefined;
}

const guides = readdirSync(DOCS)
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(DOCS, name));

t.test('the README is the front door', async (t) => {
  const readme = readFileSync(README, 'utf8');
  const lines = readme.trimEnd().split('\n').length;
  t.comment(`README.md: ${lines} lines`);
  t.ok(lines <= MAX_README_LINES, `README.md has at most ${MAX_README_LINES} lines (${lines})`);
  const linked = new Set(links(readme).map((link) => resolve(ROOT, link.split('#')[0]!)));
  t.same(
    guides.filter((guide) => !linked.has(guide)).map((guide) => relative(ROOT, guide)),
    [],
    'it links every guide under docs/',
  );
  for (const heading of [
    '## Quick start',
    '## Your first refund, in a second terminal',
    '## The cluster in one command',
    '## Where to read next',
  ])
    t.ok(readme.includes(`\n${heading}\n`), `it has "${heading}"`);
});

t.test("the README's test command is the one .ci/run runs", async (t) => {
  const readme = readFileSync(README, 'utf8');
  const run = readFileSync(join(ROOT, '.ci', 'run'), 'utf8')
    .trimEnd()
    .split('\n');
  const command = run[run.length - 1]!;
  t.equal(command, 'npm ci && npm test', '.ci/run ends with the install-and-test command');
  t.ok(readme.includes('\n```sh\n' + command + '\n```\n'), 'the README shows it as a block of its own');
});

t.test('every relative link of the README and the guides leads somewhere', async (t) => {
  const dead = [README, ...guides].flatMap((file) => deadLinks(file, readFileSync(file, 'utf8'), readRepo));
  t.ok(guides.length >= 9, `the guides were found (${guides.length})`);
  t.same(dead, [], 'no dead link, no missing heading');
});

t.test('a dead link or a missing heading is found', async (t) => {
  const docs: Record<string, string> = {
    [join(DOCS, 'a.md')]: '# A\n\n## Checkpoints: history that cannot be quietly rewritten\n\n## 9. Errors\n',
  };
  const read = (path: string) => docs[path];
  const file = join(DOCS, 'b.md');
  t.same(
    deadLinks(file, '[x](a.md#checkpoints-history-that-cannot-be-quietly-rewritten) [y](a.md#9-errors) [w](https://x.dev/a#b)', read),
    [],
  );
  t.same(deadLinks(file, '[x](a.md#the-database-away)', read), ['docs/b.md: a.md#the-database-away: no such heading']);
  t.same(deadLinks(file, '[x](c.md)', read), ['docs/b.md: c.md: no such file']);
  t.same(deadLinks(file, '```\n[x](c.md)\n```\n', read), [], 'a link-shaped line in a code block is no link');
  t.same(
    [...anchors('# T\n\n## SDK for agents: `svc-monitor-sdk`\n## Keys\n## Keys\n')],
    ['t', 'sdk-for-agents-svc-monitor-sdk', 'keys', 'keys-1'],
  );
});
