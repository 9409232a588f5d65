/** Human rendering of applications, shared by the applications commands. */
import { APPLICANT_TYPE_LABELS, type ApplicationDetail, type ApplicationView, type ApprovalResult } from '../../../protocol/applications';
import type { Output } from '../../output';
import { table } from '../../output';

/** Age against the 24-hour answer target: `3.5h`, `26.0h OVERDUE`, `answered in 5.0h (late)`. */
export function ageText(app: ApplicationView): string {
  if (app.status === 'pending') return `${app.age_hours.toFixed(1)}h${app.overdue ? ' OVERDUE' : ''}`;
  return `answered in ${app.age_hours.toFixed(1)}h${app.answered_late ? ' (late)' : ''}`;
}

export function applicationsTable(apps: ApplicationView[]): string {
  return table(
    ['ID', 'SCORE', 'TYPE', 'CONTACT', 'HANDLE', 'AGE', 'STATUS', 'WHY THIS SCORE'],
    apps.map((a) => [
      a.id,
      a.priority.score,
      a.applicant_type,
      a.contact_name,
      a.messaging_handle,
      ageText(a),
      a.status,
      a.priority.reasons.join(', '),
    ]),
  );
}

export function applicationLines(app: ApplicationDetail | ApplicationView): string[] {
  const lines = [
    `id:           ${app.id}`,
    `status:       ${app.status}${app.reject_reason ? ` (${app.reject_reason})` : ''}`,
    `received:     ${app.received_at} via ${app.source}${app.recorded_by ? ` (recorded by ${app.recorded_by})` : ''}${app.submissions > 1 ? `, submitted ${app.submissions} times` : ''}`,
    `age:          ${ageText(app)} (answer due ${app.due_at})`,
    `priority:     ${app.priority.score} (${app.priority.reasons.join(', ')})`,
    `type:         ${APPLICANT_TYPE_LABELS[app.applicant_type]}`,
    `contact:      ${app.contact_name}`,
    `messaging:    ${app.messaging_handle}`,
    `social:       ${app.social_url}`,
    `wallet:       ${app.wallet ?? '- (can be added later)'}`,
    `building:     ${app.building}`,
    ...(app.applicant_type === 'ai_agent' ? [`apis paid:    ${app.apis_paid.length > 0 ? app.apis_paid.join(', ') : 'none yet'}`] : []),
    ...(app.why !== null ? [`why:          ${app.why}`] : []),
    `feedback:     ${app.feedback_opt_in ? 'yes (early tester offers)' : 'no'}`,
    ...(app.decided_at ? [`decided:      ${app.decided_at} by ${app.decided_by}`] : []),
  ];
  if ('key' in app && app.key)
    lines.push(
      `key:          ${app.key.id} (${app.key.prefix}…, ${app.key.status}; endpoints: ${app.key.endpoints.length > 0 ? app.key.endpoints.join(', ') : 'all'})`,
    );
  else if (app.key_id) lines.push(`key:          ${app.key_id}`);
  if (app.delivery) {
    lines.push(
      app.delivery.status === 'failed'
        ? `delivery:     FAILED over ${app.delivery.notifier} at ${app.delivery.at}: ${app.delivery.error}. The application stays approved and the key is active but undelivered: run \`svcctl applications redeliver ${app.id}\` or revoke the key.`
        : app.delivery.status === 'delivered'
          ? `delivery:     delivered over ${app.delivery.notifier} at ${app.delivery.at}`
          : `delivery:     shown to the approving operator at ${app.delivery.at}`,
    );
  }
  if ('deliveries' in app && app.deliveries.length > 0) {
    lines.push('delivery log:');
    for (const d of app.deliveries) {
      lines.push(
        `  ${d.at}  ${d.notifier}  ${d.key_id}  attempt ${d.attempt}  ${d.outcome}${d.http_status !== null ? `  HTTP ${d.http_status}` : ''}${d.error ? `  ${d.error}` : ''}`,
      );
    }
  }
  return lines;
}

/** Print an approve/redeliver answer; the key (operator notifier) appears exactly once. */
export function printApproval(out: Output, verb: string, result: ApprovalResult): void {
  const endpoints = result.endpoints.length > 0 ? result.endpoints.join(', ') : 'all';
  const to = `${result.delivery.deliver_to.contact_name} at ${result.delivery.deliver_to.messaging_handle}`;
  out.line(`${verb} ${result.application.id}: key ${result.key_id} (${result.key_prefix}…) is bound to it; endpoints: ${endpoints}.`);
  if (result.delivery.status === 'shown_to_operator' && result.message !== undefined) {
    out.line(`Send this message to ${to}. The key is shown once and cannot be recovered:`);
    out.line();
    for (const line of result.message.split('\n')) out.line(`  ${line}`);
    out.line();
    return;
  }
  if (result.delivery.status === 'delivered') {
    out.line(
      `Delivered over the ${result.delivery.notifier} for ${to} (${result.delivery.attempts} attempt${result.delivery.attempts === 1 ? '' : 's'}).`,
    );
    return;
  }
  out.line(`Delivery FAILED over the ${result.delivery.notifier} for ${to}: ${result.delivery.error}.`);
  if (result.delivery.next_step) out.line(`Next: ${result.delivery.next_step}.`);
}
