// The configuration table of docs/configuration.md lists exactly the settings the schema has,
// with their env names and defaults, so the documentation cannot drift from the code.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { settingsTable } from '../../config/load';

const guide = readFileSync(join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
const section = guide.slice(guide.indexOf('| key | env | default | allowed |'));
const lines = section.split('\n').slice(2);
const rows = lines
  .slice(
    0,
    lines.findIndex((line) => !line.startsWith('|')),
  )
  .map((line) => line.split(' | ').map((cell) => cell.replace(/^\|\s*/, '').trim()));

t.test('every setting has a docs/configuration.md row with its env name and default', async (t) => {
  const documented = new Map(rows.map((cells) => [cells[0]!.replace(/`/g, ''), cells]));
  for (const setting of settingsTable()) {
    const row = documented.get(setting.key);
    if (!row) {
      t.fail(`docs/configuration.md lacks a row for ${setting.key}`);
      continue;
    }
    t.equal(row[1], '`' + setting.env + '`', `${setting.key} env name`);
    const shown = setting.default === undefined ? '—' : '`' + JSON.stringify(setting.default) + '`';
    t.equal(row[2], shown, `${setting.key} default`);
  }
});

t.test('docs/configuration.md documents no setting the schema lacks', async (t) => {
  const known = new Set(settingsTable().map((s) => s.key));
  const extra = rows.map((cells) => cells[0]!.replace(/`/g, '')).filter((key) => !known.has(key));
  t.same(extra, [], 'no stale rows');
  t.ok(rows.length >= 40, `the table was found (${rows.length} rows)`);
});
