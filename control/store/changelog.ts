/** The public changelog: flag changes and operator notices, newest first. */
import type { Db } from './db';
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

export class ChangelogTable {
  private readonly insertStmt;
  private readonly listStmt;
  private readonly byIdStmt;
  private readonly byFlagStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO changelog (at, kind, text, flag, value, author) VALUES (@at, @kind, @text, @flag, @value, @author)`,
    );
    this.listStmt = db.prepare(`SELECT * FROM changelog ORDER BY id DESC LIMIT ?`);
    this.byIdStmt = db.prepare(`SELECT * FROM changelog WHERE id = ?`);
    this.byFlagStmt = db.prepare(`SELECT * FROM changelog WHERE kind = 'flag' AND flag = ? ORDER BY id DESC LIMIT ?`);
  }

  add(entry: { at: number; kind: 'flag' | 'notice'; text: string; flag?: FlagName; value?: boolean; author: string }): number {
    const info = this.insertStmt.run({
      at: entry.at,
      kind: entry.kind,
      text: entry.text,
      flag: entry.flag ?? null,
      value: entry.value === undefined ? null : entry.value ? 1 : 0,
      author: entry.author,
    });
    return Number(info.lastInsertRowid);
  }

  byId(id: number): ChangelogEntry | undefined {
    const row = this.byIdStmt.get(id) as ChangelogRow | undefined;
    return row && changelogView(row);
  }

  list(limit = 50): ChangelogEntry[] {
    return (this.listStmt.all(limit) as ChangelogRow[]).map(changelogView);
  }

  /** The changes of one flag (each turned on or off), newest first. */
  byFlag(flag: FlagName, limit = 50): ChangelogEntry[] {
    return (this.byFlagStmt.all(flag, limit) as ChangelogRow[]).map(changelogView);
  }
}
