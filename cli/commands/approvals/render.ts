/** How svcctl shows requests for a two-person action, and the one way such a command sends (`202`: waiting). */
import type { ApprovalView } from '../../../protocol/approvals';
import { approverScopes } from '../../../protocol/approvals';
import type { Deps } from '../../deps';
import { table } from '../../output';

export function approvalsTable(approvals: readonly ApprovalView[]): string {
  return table(
    ['ID', 'STATUS', 'ACTION', 'TARGET', 'REQUESTED BY', 'REQUESTED', 'EXPIRES', 'DECIDED BY'],
    approvals.map((a) => [a.id, a.status, a.action, a.target ?? '-', a.requested_by, a.requested_at, a.expires_at, a.decided_by ?? '-']),
  );
}

/** The lines printed when a two-person action waits for a second operator. */
export function pendingLines(a: ApprovalView): string[] {
  const scopes = approverScopes(a.action, a.detail);
  return [
    `Waiting for a second operator: nothing happened yet.`,
    `Request ${a.id} (${a.action}${a.target === null ? '' : ` on ${a.target}`}) by ${a.requested_by} expires at ${a.expires_at}.`,
    `Another operator holding the scope${scopes.length > 1 ? 's' : ''} ${scopes.join(', ')} approves it with: svcctl approvals approve ${a.id}`,
  ];
}

/**
 * Send a two-person action (POST unless `method` says otherwise): its answer, or null once a
 * `202` (the action waits for a second operator, `money.approvals: 2`) has been printed, as
 * JSON with `--json`.
 */
export async function postMoney<T>(
  deps: Deps,
  path: string,
  body: unknown,
  json: boolean | undefined,
  method: 'POST' | 'PUT' | 'DELETE' = 'POST',
): Promise<T | null> {
  const answer = await deps.client.send<T | ApprovalView>(method, path, body);
  if (answer.status !== 202) return answer.body as T;
  const pending = answer.body as ApprovalView;
  if (json) deps.out.json(pending);
  else for (const line of pendingLines(pending)) deps.out.line(line);
  return null;
}
