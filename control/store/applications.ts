/**
 * Access applications and their key delivery log (migration 005). Rows keep the answers as
 * submitted (normalised by the zod schema); the delivery log names keys by id only.
 */
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

export interface ApplicationsTable {
  /** Record a new application, pending (inside `Store.mutate`). */
  insert(row: NewApplication): Promise<void>;
  byId(id: string): Promise<ApplicationRow | undefined>;
  /** The newest application with these answers received at or after `since`. */
  recentByHash(hash: string, since: number): Promise<ApplicationRow | undefined>;
  /** Count one more submission of an existing application. */
  resubmitted(id: string, at: number): Promise<void>;
  /** Every application, or those in one status, oldest first. */
  list(filter?: ApplicationFilter): Promise<ApplicationRow[]>;
  /** Pending → approved with its key. False when the application was not pending. */
  approve(id: string, at: number, by: string, keyId: string): Promise<boolean>;
  /** Pending → rejected. False when the application was not pending. */
  reject(id: string, at: number, by: string, reason: string | null): Promise<boolean>;
  /** The latest delivery outcome, shown with the application. */
  setDelivery(id: string, status: DeliveryStatus, notifier: NotifierKind, at: number, error: string | null): Promise<void>;
  /** Append one attempt to the delivery log. */
  recordAttempt(attempt: DeliveryAttempt): Promise<void>;
  /** The delivery log of one application, oldest attempt first. */
  attempts(applicationId: string): Promise<DeliveryAttempt[]>;
}
