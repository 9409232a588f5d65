/** The audit log on PostgreSQL: `../audit.ts`'s statements and view, asynchronous. */
import type { AuditEntry } from '../../../protocol/admin';
import { AUDIT_SQL, auditPageParams, auditView, type AuditBy, type AuditFilter, type AuditRow, type AuditTable } from '../audit';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';

const Q = {
  insert: sql(AUDIT_SQL.insert),
  list: sql(AUDIT_SQL.list),
  page: sql(AUDIT_SQL.page),
};

export class PgAuditTable implements Async<AuditTable> {
  constructor(private readonly conn: PgConn) {}

  async record(
    at: number,
    actor: string,
    action: string,
    target: string | null,
    detail: Record<string, unknown> = {},
    by: AuditBy = {},
  ): Promise<void> {
    await this.conn.run(Q.insert, [at, actor, action, target, JSON.stringify(detail), by.tokenId ?? null, by.approvedBy ?? null]);
  }

  async list(limit = 100): Promise<AuditEntry[]> {
    return (await this.conn.all<AuditRow>(Q.list, [limit])).map(auditView);
  }

  async page(filter: AuditFilter): Promise<AuditEntry[]> {
    return (await this.conn.all<AuditRow>(Q.page, auditPageParams(filter))).map(auditView);
  }
}
