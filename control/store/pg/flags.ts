/** Runtime flags on PostgreSQL: `../flags.ts`'s statements and views, asynchronous. */
import type { FlagName, FlagView } from '../../../protocol/admin';
import { flagsOf, type Flags } from '../../../protocol/snapshot';
import { flagView, type FlagRow, type FlagsTable } from '../flags';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';

const Q = {
  get: sql(`SELECT * FROM flags WHERE name = ?`),
  list: sql(`SELECT * FROM flags ORDER BY name`),
  values: sql(`SELECT name, value FROM flags`),
  // One statement: the row is locked while its value before the change is read.
  set: sql(
    `UPDATE flags AS f SET value = @value, updated_at = @at, updated_by = @by, note = @note
     FROM (SELECT name, value FROM flags WHERE name = @name FOR UPDATE) AS prior
     WHERE f.name = prior.name
     RETURNING prior.value`,
  ),
};

export class PgFlagsTable implements Async<FlagsTable> {
  constructor(private readonly conn: PgConn) {}

  async get(name: FlagName): Promise<FlagView | undefined> {
    const row = await this.conn.get<FlagRow>(Q.get, [name]);
    return row && flagView(row);
  }

  async list(): Promise<FlagView[]> {
    return (await this.conn.all<FlagRow>(Q.list)).map(flagView);
  }

  /** Returns whether the stored value changed. */
  async set(name: FlagName, value: boolean, at: number, by: string, note: string | null): Promise<boolean> {
    const before = await this.conn.value<0 | 1>(Q.set, { value: value ? 1 : 0, at, by, note, name });
    return before === undefined || (before === 1) !== value;
  }

  /** Every flag's value, as snapshots and deltas carry them. */
  async values(): Promise<Flags> {
    return flagsOf(await this.conn.all<{ name: string; value: number }>(Q.values));
  }
}
