/** The public changelog: flag changes and operator notices, newest first. */
import type { ChangelogEntry, FlagName } from '../../protocol/admin';

export interface ChangelogRow {
  id: number;
  at: number;
  kind: 'flag' | 'notice';
  text: string;
  flag: FlagName | null;
  value: 0 | 1 | null;
  author: string;
}

/** A stored changelog entry as callers see it. */
export const changelogView = (row: ChangelogRow): ChangelogEntry => ({
  id: row.id,
  at: new Date(row.at).toISOString(),
  kind: row.kind,
  text: row.text,
  flag: row.flag,
  value: row.value === null ? null : row.value === 1,
  author: row.author,
});

export interface ChangelogTable {
  /** Add an entry (inside `Store.mutate`); answers its id. */
  add(entry: { at: number; kind: 'flag' | 'notice'; text: string; flag?: FlagName; value?: boolean; author: string }): Promise<number>;
  byId(id: number): Promise<ChangelogEntry | undefined>;
  /** The newest `limit` entries, newest first. */
  list(limit?: number): Promise<ChangelogEntry[]>;
  /** The changes of one flag (each turned on or off), newest first. */
  byFlag(flag: FlagName, limit?: number): Promise<ChangelogEntry[]>;
}
