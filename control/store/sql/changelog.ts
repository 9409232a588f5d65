/** The public changelog (`../changelog.ts`), on either database. */
import type { ChangelogEntry, FlagName } from '../../../protocol/admin';
import { changelogView, type ChangelogRow, type ChangelogTable } from '../changelog';
import { sql, type Conn } from '../conn';

const Q = {
  insert: sql(
    `INSERT INTO changelog (at, kind, text, flag, value, author) VALUES (@at, @kind, @text, @flag, @value, @author) RETURNING id`,
  ),
  list: sql(`SELECT * FROM changelog ORDER BY id DESC LIMIT ?`),
  byId: sql(`SELECT * FROM changelog WHERE id = ?`),
  byFlag: sql(`SELECT * FROM changelog WHERE kind = 'flag' AND flag = ? ORDER BY id DESC LIMIT ?`),
};

export class SqlChangelogTable implements ChangelogTable {
  constructor(private readonly conn: Conn) {}

  async add(entry: Parameters<ChangelogTable['add']>[0]): Promise<number> {
    const id = await this.conn.value<number>(Q.insert, {
      at: entry.at,
      kind: entry.kind,
      text: entry.text,
      flag: entry.flag ?? null,
      value: entry.value === undefined ? null : entry.value ? 1 : 0,
      author: entry.author,
    });
    return id!;
  }

  async byId(id: number): Promise<ChangelogEntry | undefined> {
    const row = await this.conn.get<ChangelogRow>(Q.byId, [id]);
    return row && changelogView(row);
  }

  async list(limit = 50): Promise<ChangelogEntry[]> {
    return (await this.conn.all<ChangelogRow>(Q.list, [limit])).map(changelogView);
  }

  async byFlag(flag: FlagName, limit = 50): Promise<ChangelogEntry[]> {
    return (await this.conn.all<ChangelogRow>(Q.byFlag, [flag, limit])).map(changelogView);
  }
}
