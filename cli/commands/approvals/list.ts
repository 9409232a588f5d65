/** `svcctl approvals list [--status S]`: money actions asked for with `money.approvals: 2`, newest first. */
import { APPROVAL_STATUSES, type ApprovalList } from '../../../protocol/approvals';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { approvalsTable } from './render';

export async function run(opts: { status?: string; json?: boolean }, deps: Deps): Promise<number> {
  if (opts.status !== undefined && !(APPROVAL_STATUSES as readonly string[]).includes(opts.status)) {
    throw new UsageError(`--status must be one of ${APPROVAL_STATUSES.join(', ')}`);
  }
  const query = opts.status === undefined ? '' : `?status=${opts.status}`;
  const answer = await deps.client.get<ApprovalList>(`/_admin/v1/approvals${query}`);
  if (opts.json) deps.out.json(answer);
  else if (answer.approvals.length === 0) deps.out.line('No requests.');
  else deps.out.line(approvalsTable(answer.approvals));
  return EXIT_OK;
}
