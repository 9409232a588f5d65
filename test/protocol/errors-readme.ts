/**
 * docs/errors.md's "# Errors" table lists exactly the catalogue's codes with their statuses, so
 * the documentation cannot drift from `protocol/errors.ts`. Rows look like
 * "| `svc_auth_not_in_beta` | 403 | when … |" under a "| Code | HTTP | When |" header.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ERRORS, ERROR_CODES } from '../../protocol/errors';

const GUIDE = resolve(__dirname, '..', '..', 'docs', 'errors.md');

function errorsSection(markdown: string): string | null {
  const lines = markdown.split(/\r?\n/);
  const start = lines.findIndex((l) => /^##?\s+Errors\s*$/.test(l));
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && /^##?\s/.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim());
}

t.test('the docs/errors.md table matches the catalogue', async (t) => {
  let markdown: string;
  try {
    markdown = readFileSync(GUIDE, 'utf8');
  } catch (err) {
    t.fail(`cannot read ${GUIDE}: ${(err as Error).message}`);
    return;
  }
  const section = errorsSection(markdown);
  if (section === null) {
    t.fail('docs/errors.md has no "# Errors" section');
    return;
  }
  const tableLines = section.split('\n').filter((l) => l.trim().startsWith('|'));
  t.ok(tableLines.length > 0, 'the section has a table');
  const header = cells(tableLines[0] ?? '');
  t.same(
    header.slice(0, 3).map((h) => h.toLowerCase()),
    ['code', 'http', 'when'],
    'header is | Code | HTTP | When |',
  );

  const rows = new Map<string, number>();
  const duplicates: string[] = [];
  for (const line of tableLines.slice(1)) {
    const [first, second] = cells(line);
    if (first === undefined || /^:?-+:?$/.test(first)) continue; // separator row
    const code = /^`([a-z0-9_]+)`$/.exec(first)?.[1];
    t.ok(code, `first cell is a code in backticks: ${first}`);
    if (!code) continue;
    t.match(second ?? '', /^\d{3}$/, `${code}: second cell is an HTTP status`);
    if (rows.has(code)) duplicates.push(code);
    rows.set(code, Number(second));
  }

  t.same(duplicates, [], 'no code is listed twice');
  t.same([...rows.keys()].sort(), [...ERROR_CODES].sort(), 'docs/errors.md lists exactly the catalogue codes');
  for (const code of ERROR_CODES) {
    if (rows.has(code)) t.equal(rows.get(code), ERRORS[code].status, `${code}: docs/errors.md status matches the catalogue`);
  }
});

t.test('the table parser reads the documented format', async (t) => {
  // The parser itself must find rows, so an empty or reformatted table cannot pass silently.
  const sample = [
    '# svc',
    '## Errors',
    '',
    '| Code | HTTP | When |',
    '|---|---|---|',
    '| `svc_auth_not_in_beta` | 403 | gate on, no key |',
    '| `svc_rate_limited` | 429 | limit hit |',
    '## Next',
    '| `svc_internal` | 500 | not in the section |',
  ].join('\n');
  const section = errorsSection(sample);
  t.ok(section);
  const rows = section!
    .split('\n')
    .filter((l) => l.trim().startsWith('|'))
    .slice(1)
    .map(cells)
    .filter(([first]) => first !== undefined && !/^:?-+:?$/.test(first));
  t.same(
    rows.map(([c, s]) => [c, s]),
    [
      ['`svc_auth_not_in_beta`', '403'],
      ['`svc_rate_limited`', '429'],
    ],
  );
  t.match(errorsSection('# Errors\n\n| Code | HTTP | When |\n## Next\n'), /^\s*\| Code/, "the guide's own title opens the section too");
  t.equal(errorsSection('# svc\n### Errors\n'), null, 'a deeper heading is not the section');
});
