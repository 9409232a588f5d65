/**
 * Audit log of every admin action: who (the operator's name, and the id of the token used),
 * what, when, and for a two-person action who approved it. Details are written by the admin
 * handlers and never carry a key's or a token's plaintext (test/control/plaintext-nowhere.ts).
 */
import type { Db } from './db';
import type { AuditEntry } from '../../protocol/admin';

export interface AuditRow {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string | null;
  detail: string;
  token_id: string | null;
  approved_by: string | null;
}

/** Who made a change beyond the actor's name: the token's id, and the operator who approved it. */
export interface AuditBy {
  tokenId?: string | null;
  approvedBy?: string | null;
}

/** One page of the audit log: rows below `before` (an id), newest first, those matching every filter given. */
export interface AuditFilter {
  /** The actor: an operator's name, `root`, `control`. */
  operator?: string;
  /** An action (`keys.revoke`), or a family (`keys`: `keys` and every `keys.…`). */
  action?: string;
  /** Rows at or after this time (ms). */
  since?: number;
  /** Rows with a smaller id only (the last id of the previous page). */
  before?: number;
  limit: number;
}

/** A stored audit row as the admin API shows it. */
export const auditView = (row: AuditRow): AuditEntry => ({
  id: row.id,
  at: new Date(row.at).toISOString(),
  actor: row.actor,
  token_id: row.token_id,
  approved_by: row.approved_by,
  action: row.action,
  target: row.target,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
});

/** The SQL both stores share. */
export const AUDIT_SQL = {
  insert: `INSERT INTO audit_log (at, actor, action, target, detail, token_id, approved_by) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  list: `SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`,
  // A filter left out is a NULL parameter; a family matches its own name and every `family.…`.
  page: `SELECT * FROM audit_log
         WHERE id < @before AND at >= @since
           AND (CAST(@operator AS TEXT) IS NULL OR actor = @operator)
           AND (CAST(@action AS TEXT) IS NULL OR action = @action OR substr(action, 1, length(@action) + 1) = @action || '.')
         ORDER BY id DESC LIMIT @limit`,
} as const;

/** The parameters of {@link AUDIT_SQL}'s `page`. */
export const auditPageParams = (filter: AuditFilter) => ({
  before: filter.before ?? Number.MAX_SAFE_INTEGER,
  since: filter.since ?? 0,
  operator: filter.operator ?? null,
  action: filter.action ?? null,
  limit: filter.limit,
});

export class AuditTable {
  private readonly insertStmt;
  private readonly listStmt;
  private readonly pageStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(AUDIT_SQL.insert);
    this.listStmt = db.prepare(AUDIT_SQL.list);
    this.pageStmt = db.prepare(AUDIT_SQL.page);
  }

  record(at: number, actor: string, action: string, target: string | null, detail: Record<string, unknown> = {}, by: AuditBy = {}): void {
    this.insertStmt.run(at, actor, action, target, JSON.stringify(detail), by.tokenId ?? null, by.approvedBy ?? null);
  }

  list(limit = 100): AuditEntry[] {
    return (this.listStmt.all(limit) as AuditRow[]).map(auditView);
  }

  /** One page of the filtered log, newest first. */
  page(filter: AuditFilter): AuditEntry[] {
    return (this.pageStmt.all(auditPageParams(filter)) as AuditRow[]).map(auditView);
  }
}
