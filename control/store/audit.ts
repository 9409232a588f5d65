/**
 * Audit log of every admin action: who (the admin token's name), what, when. Details are
 * written by the admin handlers and never carry a key's plaintext (test/control/plaintext-nowhere.ts).
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
}

/** A stored audit row as the admin API shows it. */
export const auditView = (row: AuditRow): AuditEntry => ({
  id: row.id,
  at: new Date(row.at).toISOString(),
  actor: row.actor,
  action: row.action,
  target: row.target,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
});

export class AuditTable {
  private readonly insertStmt;
  private readonly listStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)`);
    this.listStmt = db.prepare(`SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`);
  }

  record(at: number, actor: string, action: string, target: string | null, detail: Record<string, unknown> = {}): void {
    this.insertStmt.run(at, actor, action, target, JSON.stringify(detail));
  }

  list(limit = 100): AuditEntry[] {
    return (this.listStmt.all(limit) as AuditRow[]).map(auditView);
  }
}
