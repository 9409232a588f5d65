/** `svcctl approvals reject ID [--reason TEXT]`: the request is closed without acting (its requester may withdraw it). */
import type { ApprovalView } from '../../../protocol/approvals';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { id: string; reason?: string; json?: boolean }, deps: Deps): Promise<number> {
  const body = opts.reason === undefined ? {} : { reason: opts.reason };
  const answer = await deps.client.post<ApprovalView>(`/_admin/v1/approvals/${encodeURIComponent(opts.id)}/reject`, body);
  if (opts.json) deps.out.json(answer);
  else deps.out.line(`Rejected ${answer.id} (${answer.action}, asked by ${answer.requested_by}); nothing happened.`);
  return EXIT_OK;
}
