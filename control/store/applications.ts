/**
 * Access applications and their key delivery log (migration 005). Rows keep the answers as
 * submitted (normalised by the zod schema); the delivery log names keys by id only.
 */
import type { Db } from './db';
import type {
  Application,
  ApplicationSource,
  ApplicationStatus,
  DeliveryAttemptView,
  DeliveryStatus,
  NotifierKind,
} from '../../protocol/applications';

export interface ApplicationRow {
  id: string;
  received_at: number;
  source: ApplicationSource;
  status: ApplicationStatus;
  building: string;
  contact_name: string;
  wallet: string | null;
  social_url: string;
  messaging_handle: string;
  applicant_type: Application['applicant_type'];
  apis_paid: string;
  why: string | null;
  feedback_opt_in: 0 | 1;
  content_hash: string;
  submissions: number;
  last_submitted_at: number;
  recorded_by: string | null;
  decided_at: number | null;
  decided_by: string | null;
  reject_reason: string | null;
  key_id: string | null;
  delivery_status: DeliveryStatus | null;
  delivery_notifier: NotifierKind | null;
  delivery_at: number | null;
  delivery_error: string | null;
}

export interface NewApplication {
  id: string;
  received_at: number;
  source: ApplicationSource;
  application: Application;
  content_hash: string;
  recorded_by: string | null;
}

export interface DeliveryAttempt {
  application_id: string;
  key_id: string;
  notifier: NotifierKind;
  attempt: number;
  at: number;
  outcome: DeliveryAttemptView['outcome'];
  http_status: number | null;
  error: string | null;
  target: string | null;
}

interface DeliveryRow extends DeliveryAttempt {
  id: number;
}

export interface ApplicationFilter {
  status?: ApplicationStatus;
}

/** The answers of a row, in the shape they were validated in. */
export function applicationOf(row: ApplicationRow): Application {
  return {
    building: row.building,
    contact_name: row.contact_name,
    wallet: row.wallet,
    social_url: row.social_url,
    messaging_handle: row.messaging_handle,
    applicant_type: row.applicant_type,
    apis_paid: JSON.parse(row.apis_paid) as string[],
    why: row.why,
    feedback_opt_in: row.feedback_opt_in === 1,
  };
}

export function deliveryView(row: DeliveryAttempt): DeliveryAttemptView {
  return {
    at: new Date(row.at).toISOString(),
    notifier: row.notifier,
    key_id: row.key_id,
    attempt: row.attempt,
    outcome: row.outcome,
    http_status: row.http_status,
    error: row.error,
    target: row.target,
  };
}

/** The named parameters of the insert statement for `row` (the answers as columns). */
export function insertParams(row: NewApplication): Record<string, unknown> {
  const a = row.application;
  return {
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
  };
}

export class ApplicationsTable {
  private readonly insertStmt;
  private readonly byIdStmt;
  private readonly recentByHashStmt;
  private readonly resubmittedStmt;
  private readonly listStmt;
  private readonly listByStatusStmt;
  private readonly approveStmt;
  private readonly rejectStmt;
  private readonly deliveryStmt;
  private readonly attemptStmt;
  private readonly attemptsStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO applications (id, received_at, source, status, building, contact_name, wallet, social_url,
                                 messaging_handle, applicant_type, apis_paid, why, feedback_opt_in, content_hash,
                                 last_submitted_at, recorded_by)
       VALUES (@id, @received_at, @source, 'pending', @building, @contact_name, @wallet, @social_url,
               @messaging_handle, @applicant_type, @apis_paid, @why, @feedback_opt_in, @content_hash,
               @received_at, @recorded_by)`,
    );
    this.byIdStmt = db.prepare(`SELECT * FROM applications WHERE id = ?`);
    this.recentByHashStmt = db.prepare(
      `SELECT * FROM applications WHERE content_hash = ? AND received_at >= ? ORDER BY received_at DESC LIMIT 1`,
    );
    this.resubmittedStmt = db.prepare(
      `UPDATE applications SET submissions = submissions + 1, last_submitted_at = max(last_submitted_at, ?) WHERE id = ?`,
    );
    this.listStmt = db.prepare(`SELECT * FROM applications ORDER BY received_at, id`);
    this.listByStatusStmt = db.prepare(`SELECT * FROM applications WHERE status = ? ORDER BY received_at, id`);
    this.approveStmt = db.prepare(
      `UPDATE applications SET status = 'approved', decided_at = ?, decided_by = ?, key_id = ? WHERE id = ? AND status = 'pending'`,
    );
    this.rejectStmt = db.prepare(
      `UPDATE applications SET status = 'rejected', decided_at = ?, decided_by = ?, reject_reason = ? WHERE id = ? AND status = 'pending'`,
    );
    this.deliveryStmt = db.prepare(
      `UPDATE applications SET delivery_status = ?, delivery_notifier = ?, delivery_at = ?, delivery_error = ? WHERE id = ?`,
    );
    this.attemptStmt = db.prepare(
      `INSERT INTO application_deliveries (application_id, key_id, notifier, attempt, at, outcome, http_status, error, target)
       VALUES (@application_id, @key_id, @notifier, @attempt, @at, @outcome, @http_status, @error, @target)`,
    );
    this.attemptsStmt = db.prepare(`SELECT * FROM application_deliveries WHERE application_id = ? ORDER BY id`);
  }

  insert(row: NewApplication): void {
    this.insertStmt.run(insertParams(row));
  }

  byId(id: string): ApplicationRow | undefined {
    return this.byIdStmt.get(id) as ApplicationRow | undefined;
  }

  /** The newest application with these answers received at or after `since`. */
  recentByHash(hash: string, since: number): ApplicationRow | undefined {
    return this.recentByHashStmt.get(hash, since) as ApplicationRow | undefined;
  }

  /** Count one more submission of an existing application. */
  resubmitted(id: string, at: number): void {
    this.resubmittedStmt.run(at, id);
  }

  list(filter: ApplicationFilter = {}): ApplicationRow[] {
    return (filter.status === undefined ? this.listStmt.all() : this.listByStatusStmt.all(filter.status)) as ApplicationRow[];
  }

  /** Pending → approved with its key. False when the application was not pending. */
  approve(id: string, at: number, by: string, keyId: string): boolean {
    return this.approveStmt.run(at, by, keyId, id).changes === 1;
  }

  /** Pending → rejected. False when the application was not pending. */
  reject(id: string, at: number, by: string, reason: string | null): boolean {
    return this.rejectStmt.run(at, by, reason, id).changes === 1;
  }

  /** The latest delivery outcome, shown with the application. */
  setDelivery(id: string, status: DeliveryStatus, notifier: NotifierKind, at: number, error: string | null): void {
    this.deliveryStmt.run(status, notifier, at, error, id);
  }

  /** Append one attempt to the delivery log. */
  recordAttempt(attempt: DeliveryAttempt): void {
    this.attemptStmt.run(attempt);
  }

  attempts(applicationId: string): DeliveryAttempt[] {
    return (this.attemptsStmt.all(applicationId) as DeliveryRow[]).map(({ id: _id, ...rest }) => rest);
  }
}
