/** Access applications and their key delivery log (`../applications.ts`), on either database. */
import type { DeliveryStatus, NotifierKind } from '../../../protocol/applications';
import type { ApplicationFilter, ApplicationRow, ApplicationsTable, DeliveryAttempt, NewApplication } from '../applications';
import { sql, type Conn } from '../conn';

const Q = {
  insert: sql(
    `INSERT INTO applications (id, received_at, source, status, building, contact_name, wallet, social_url,
                               messaging_handle, applicant_type, apis_paid, why, feedback_opt_in, content_hash,
                               last_submitted_at, recorded_by)
     VALUES (@id, @received_at, @source, 'pending', @building, @contact_name, @wallet, @social_url,
             @messaging_handle, @applicant_type, @apis_paid, @why, @feedback_opt_in, @content_hash,
             @received_at, @recorded_by)`,
  ),
  byId: sql(`SELECT * FROM applications WHERE id = ?`),
  // `id` last: the newest of two received in the same ms is one answer, not either.
  recentByHash: sql(`SELECT * FROM applications WHERE content_hash = ? AND received_at >= ? ORDER BY received_at DESC, id DESC LIMIT 1`),
  resubmitted: sql({
    sqlite: `UPDATE applications SET submissions = submissions + 1, last_submitted_at = max(last_submitted_at, ?) WHERE id = ?`,
    pg: `UPDATE applications SET submissions = submissions + 1, last_submitted_at = GREATEST(last_submitted_at, ?) WHERE id = ?`,
  }),
  list: sql(`SELECT * FROM applications ORDER BY received_at, id`),
  listByStatus: sql(`SELECT * FROM applications WHERE status = ? ORDER BY received_at, id`),
  approve: sql(
    `UPDATE applications SET status = 'approved', decided_at = ?, decided_by = ?, key_id = ? WHERE id = ? AND status = 'pending'`,
  ),
  reject: sql(
    `UPDATE applications SET status = 'rejected', decided_at = ?, decided_by = ?, reject_reason = ? WHERE id = ? AND status = 'pending'`,
  ),
  delivery: sql(`UPDATE applications SET delivery_status = ?, delivery_notifier = ?, delivery_at = ?, delivery_error = ? WHERE id = ?`),
  attempt: sql(
    `INSERT INTO application_deliveries (application_id, key_id, notifier, attempt, at, outcome, http_status, error, target)
     VALUES (@application_id, @key_id, @notifier, @attempt, @at, @outcome, @http_status, @error, @target)`,
  ),
  attempts: sql(
    `SELECT application_id, key_id, notifier, attempt, at, outcome, http_status, error, target
     FROM application_deliveries WHERE application_id = ? ORDER BY id`,
  ),
};

export class SqlApplicationsTable implements ApplicationsTable {
  constructor(private readonly conn: Conn) {}

  async insert(row: NewApplication): Promise<void> {
    const a = row.application;
    await this.conn.run(Q.insert, {
      id: row.id,
      received_at: row.received_at,
      source: row.source,
      building: a.building,
      contact_name: a.contact_name,
      wallet: a.wallet,
      social_url: a.social_url,
      messaging_handle: a.messaging_handle,
      applicant_type: a.applicant_type,
      apis_paid: JSON.stringify(a.apis_paid),
      why: a.why,
      feedback_opt_in: a.feedback_opt_in ? 1 : 0,
      content_hash: row.content_hash,
      recorded_by: row.recorded_by,
    });
  }

  byId(id: string): Promise<ApplicationRow | undefined> {
    return this.conn.get(Q.byId, [id]);
  }

  recentByHash(hash: string, since: number): Promise<ApplicationRow | undefined> {
    return this.conn.get(Q.recentByHash, [hash, since]);
  }

  async resubmitted(id: string, at: number): Promise<void> {
    await this.conn.run(Q.resubmitted, [at, id]);
  }

  list(filter: ApplicationFilter = {}): Promise<ApplicationRow[]> {
    return filter.status === undefined ? this.conn.all(Q.list) : this.conn.all(Q.listByStatus, [filter.status]);
  }

  async approve(id: string, at: number, by: string, keyId: string): Promise<boolean> {
    return (await this.conn.run(Q.approve, [at, by, keyId, id])) === 1;
  }

  async reject(id: string, at: number, by: string, reason: string | null): Promise<boolean> {
    return (await this.conn.run(Q.reject, [at, by, reason, id])) === 1;
  }

  async setDelivery(id: string, status: DeliveryStatus, notifier: NotifierKind, at: number, error: string | null): Promise<void> {
    await this.conn.run(Q.delivery, [status, notifier, at, error, id]);
  }

  async recordAttempt(attempt: DeliveryAttempt): Promise<void> {
    await this.conn.run(Q.attempt, { ...attempt });
  }

  attempts(applicationId: string): Promise<DeliveryAttempt[]> {
    return this.conn.all(Q.attempts, [applicationId]);
  }
}
