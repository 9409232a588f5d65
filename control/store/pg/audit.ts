/** The audit log on PostgreSQL: `../audit.ts`'s statements and view, asynchronous. */
import type { AuditEntry } from '../../../protocol/admin';
import { auditView, type AuditRow, type AuditTable } from '../audit';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';

const Q = {
  insert: sql(`INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)`),
  list: sql(`SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`),
};

export class PgAuditTable implements Async<AuditTable> {
  constructor(private readonly conn: PgConn) {}

  async record(at: number, actor: string, action: string, target: string | null, detail: Record<string, unknown> = {}): Promise<void> {
    await this.conn.run(Q.insert, [at, actor, action, target, JSON.stringify(detail)]);
  }

  async list(limit = 100): Promise<AuditEntry[]> {
    return (await this.conn.all<AuditRow>(Q.list, [limit])).map(auditView);
  }
}
