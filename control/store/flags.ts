/**
 * Runtime flags (`FLAG_NAMES` in protocol/admin.ts), each seeded off by the migration that
 * adds it (migration 1: `beta_gate_enabled`, `maintenance_mode`).
 */
import type { Db } from './db';
import type { FlagName, FlagView } from '../../protocol/admin';
import { flagsOf, type Flags } from '../../protocol/snapshot';

export interface FlagRow {
  name: FlagName;
  value: 0 | 1;
  updated_at: number;
  updated_by: string;
  note: string | null;
}

/** A stored flag as the admin API shows it. */
export const flagView = (row: FlagRow): FlagView => ({
  name: row.name,
  value: row.value === 1,
  updated_at: new Date(row.updated_at).toISOString(),
  updated_by: row.updated_by,
  note: row.note,
});

export class FlagsTable {
  private readonly getStmt;
  private readonly listStmt;
  private readonly setStmt;
  private readonly valuesStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare(`SELECT * FROM flags WHERE name = ?`);
    this.listStmt = db.prepare(`SELECT * FROM flags ORDER BY name`);
    this.valuesStmt = db.prepare(`SELECT name, value FROM flags`);
    this.setStmt = db.prepare(`UPDATE flags SET value = ?, updated_at = ?, updated_by = ?, note = ? WHERE name = ?`);
  }

  get(name: FlagName): FlagView | undefined {
    const row = this.getStmt.get(name) as FlagRow | undefined;
    return row && flagView(row);
  }

  list(): FlagView[] {
    return (this.listStmt.all() as FlagRow[]).map(flagView);
  }

  /** Returns whether the stored value changed. */
  set(name: FlagName, value: boolean, at: number, by: string, note: string | null): boolean {
    const before = this.get(name);
    this.setStmt.run(value ? 1 : 0, at, by, note, name);
    return before?.value !== value;
  }

  /** Every flag's value, as snapshots and deltas carry them. */
  values(): Flags {
    return flagsOf(this.valuesStmt.all() as { name: string; value: number }[]);
  }
}
