/** Admin views of applications: answers, priority, age against the 24-hour answer target. */
import {
  ANSWER_WITHIN_HOURS,
  type DeliveryAttemptView,
  type ApplicationDetail,
  type ApplicationStatus,
  type ApplicationView,
} from '../../protocol/applications';
import type { ControlContext } from '../context';
import { applicationOf, type ApplicationRow, type DeliveryAttempt } from '../store/applications';
import { keyStatus } from '../store/keys';
import { priority } from './scoring';

export const ANSWER_TARGET_MS = ANSWER_WITHIN_HOURS * 3600 * 1000;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

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

export function applicationView(row: ApplicationRow, now: number): ApplicationView {
  const app = applicationOf(row);
  const due = row.received_at + ANSWER_TARGET_MS;
  return {
    id: row.id,
    source: row.source,
    status: row.status,
    ...app,
    received_at: iso(row.received_at)!,
    due_at: iso(due)!,
    age_hours: Math.round(((row.decided_at ?? now) - row.received_at) / 360_000) / 10,
    overdue: row.status === 'pending' && now > due,
    answered_late: row.decided_at === null ? null : row.decided_at > due,
    priority: priority(app),
    submissions: row.submissions,
    recorded_by: row.recorded_by,
    decided_at: iso(row.decided_at),
    decided_by: row.decided_by,
    reject_reason: row.reject_reason,
    key_id: row.key_id,
    delivery:
      row.delivery_status === null || row.delivery_notifier === null || row.delivery_at === null
        ? null
        : { status: row.delivery_status, notifier: row.delivery_notifier, at: iso(row.delivery_at)!, error: row.delivery_error },
  };
}

export async function applicationDetail(ctx: ControlContext, row: ApplicationRow): Promise<ApplicationDetail> {
  const now = ctx.now();
  const key = row.key_id === null ? undefined : await ctx.store.keys.byId(row.key_id);
  return {
    ...applicationView(row, now),
    key: key ? { id: key.id, prefix: key.prefix, status: keyStatus(key, now), endpoints: JSON.parse(key.endpoints) as string[] } : null,
    deliveries: (await ctx.store.applications.attempts(row.id)).map(deliveryView),
  };
}

export interface ListFilter {
  status?: ApplicationStatus;
  overdue?: boolean;
  testers?: boolean;
}

const STATUS_ORDER: Record<ApplicationStatus, number> = { pending: 0, approved: 1, rejected: 1 };

/**
 * Applications in review order: pending first; among them the highest priority score, then
 * the oldest; decided ones after, newest decision first.
 */
export async function listApplications(ctx: ControlContext, filter: ListFilter): Promise<ApplicationView[]> {
  const now = ctx.now();
  const status = filter.overdue ? 'pending' : filter.status;
  const rows = await ctx.store.applications.list(status === undefined ? {} : { status });
  return rows
    .map((row) => ({ row, view: applicationView(row, now) }))
    .filter(({ view }) => (!filter.overdue || view.overdue) && (!filter.testers || view.feedback_opt_in))
    .sort(
      (a, b) =>
        STATUS_ORDER[a.row.status] - STATUS_ORDER[b.row.status] ||
        (a.row.status === 'pending'
          ? b.view.priority.score - a.view.priority.score || a.row.received_at - b.row.received_at
          : (b.row.decided_at ?? 0) - (a.row.decided_at ?? 0)) ||
        a.row.id.localeCompare(b.row.id),
    )
    .map(({ view }) => view);
}
