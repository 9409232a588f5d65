/** The audit log (`../audit.ts`), on either database. */
import type { AuditEntry } from '../../../protocol/admin';
import { auditView, type AuditBy, type AuditFilter, type AuditRow, type AuditTable } from '../audit';
import { sql, type Conn } from '../conn';

const Q = {
  insert: sql(`INSERT INTO audit_log (at, actor, action, target, detail, token_id, approved_by) VALUES (?, ?, ?, ?, ?, ?, ?)`),
  list: sql(`SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`),
  // A filter left out is a NULL parameter; a family matches its own name and every `family.…`.
  page: sql(`SELECT * FROM audit_log
             WHERE id < @before AND at >= @since
               AND (CAST(@operator AS TEXT) IS NULL OR actor = @operator)
               AND (CAST(@action AS TEXT) IS NULL OR action = @action OR substr(action, 1, length(@action) + 1) = @action || '.')
             ORDER BY id DESC LIMIT @limit`),
};

export class SqlAuditTable implements AuditTable {
  constructor(private readonly conn: Conn) {}

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
    const params = {
      before: filter.before ?? Number.MAX_SAFE_INTEGER,
      since: filter.since ?? 0,
      operator: filter.operator ?? null,
      action: filter.action ?? null,
      limit: filter.limit,
    };
    return (await this.conn.all<AuditRow>(Q.page, params)).map(auditView);
  }
}
