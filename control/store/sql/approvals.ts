/** Requests for a money action (`../approvals.ts`), on either database. */
import { sql, type Conn } from '../conn';
import { APPROVAL_LIST_LIMIT, type ApprovalRow, type ApprovalsTable, type Decision, type NewApproval } from '../approvals';

const Q = {
  insert: sql(
    `INSERT INTO approvals (id, action, target, detail, requested_by, requested_token_id, requested_at, expires_at)
     VALUES (@id, @action, @target, @detail, @requested_by, @requested_token_id, @requested_at, @expires_at)`,
  ),
  byId: sql(`SELECT * FROM approvals WHERE id = ?`),
  list: sql(`SELECT * FROM approvals ORDER BY requested_at DESC, id DESC LIMIT ?`),
  decide: sql(
    `UPDATE approvals SET status = @status, decided_by = @by, decided_at = @now, reason = @reason
     WHERE id = @id AND status = 'pending' AND expires_at > @now`,
  ),
};

export class SqlApprovalsTable implements ApprovalsTable {
  constructor(private readonly conn: Conn) {}

  async insert(row: NewApproval): Promise<void> {
    await this.conn.run(Q.insert, { ...row });
  }

  byId(id: string): Promise<ApprovalRow | undefined> {
    return this.conn.get<ApprovalRow>(Q.byId, [id]);
  }

  list(): Promise<ApprovalRow[]> {
    return this.conn.all<ApprovalRow>(Q.list, [APPROVAL_LIST_LIMIT]);
  }

  async decide(d: Decision): Promise<boolean> {
    return (await this.conn.run(Q.decide, { ...d })) === 1;
  }
}
