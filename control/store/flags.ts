/**
 * Runtime flags (`FLAG_NAMES` in protocol/admin.ts), each seeded off by the migration that
 * adds it (migration 1: `beta_gate_enabled`, `maintenance_mode`).
 */
import type { FlagName, FlagView } from '../../protocol/admin';
import type { Flags } from '../../protocol/snapshot';

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

export interface FlagsTable {
  get(name: FlagName): Promise<FlagView | undefined>;
  /** Every flag, by name. */
  list(): Promise<FlagView[]>;
  /** Set one flag (inside `Store.mutate`); answers whether its stored value changed. */
  set(name: FlagName, value: boolean, at: number, by: string, note: string | null): Promise<boolean>;
  /** Every flag's value, as snapshots and deltas carry them. */
  values(): Promise<Flags>;
}
