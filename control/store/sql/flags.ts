/** Runtime flags (`../flags.ts`), on either database. */
import type { FlagName, FlagView } from '../../../protocol/admin';
import { flagsOf, type Flags } from '../../../protocol/snapshot';
import { sql, type Conn } from '../conn';
import { flagView, type FlagRow, type FlagsTable } from '../flags';

const Q = {
  get: sql(`SELECT * FROM flags WHERE name = ?`),
  list: sql(`SELECT * FROM flags ORDER BY name`),
  values: sql(`SELECT name, value FROM flags`),
  set: sql(`UPDATE flags SET value = ?, updated_at = ?, updated_by = ?, note = ? WHERE name = ?`),
};

export class SqlFlagsTable implements FlagsTable {
  constructor(private readonly conn: Conn) {}

  async get(name: FlagName): Promise<FlagView | undefined> {
    const row = await this.conn.get<FlagRow>(Q.get, [name]);
    return row && flagView(row);
  }

  async list(): Promise<FlagView[]> {
    return (await this.conn.all<FlagRow>(Q.list)).map(flagView);
  }

  async set(name: FlagName, value: boolean, at: number, by: string, note: string | null): Promise<boolean> {
    const before = await this.get(name);
    await this.conn.run(Q.set, [value ? 1 : 0, at, by, note, name]);
    return before?.value !== value;
  }

  async values(): Promise<Flags> {
    return flagsOf(await this.conn.all<{ name: string; value: number }>(Q.values));
  }
}
