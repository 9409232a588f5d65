/** `svcctl applications reject ID [--reason TEXT]`: no key is issued. */
import type { ApplicationRejected } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { id: string; reason?: string; json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.post<ApplicationRejected>(
    `/_admin/v1/applications/${encodeURIComponent(opts.id)}/reject`,
    opts.reason !== undefined ? { reason: opts.reason } : {},
  );
  if (opts.json) deps.out.json(answer);
  else {
    const a = answer.application;
    deps.out.line(`Rejected ${a.id}${a.reject_reason ? `: ${a.reject_reason}` : ''}. Tell ${a.contact_name} at ${a.messaging_handle}.`);
  }
  return EXIT_OK;
}
