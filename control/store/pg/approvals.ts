/** Requests for a money action on PostgreSQL: `../approvals.ts`'s statements (the same SQL), asynchronous. */
import { APPROVAL_LIST_LIMIT, APPROVAL_SQL, type ApprovalRow, type ApprovalsTable, type Decision, type NewApproval } from '../approvals';
import type { Async } from '../seam';
import { sql, type PgConn, type Sql } from './conn';

const Q = Object.fromEntries(Object.entries(APPROVAL_SQL).map(([name, text]) => [name, sql(text)])) as Record<
  keyof typeof APPROVAL_SQL,
  Sql
>;

export class PgApprovalsTable implements Async<ApprovalsTable> {
  constructor(private readonly conn: PgConn) {}

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
