/**
 * `svcctl applications redeliver ID [--to-operator]`: give the application's key a new secret
 * (the old one stops working now) and deliver it again, through the configured notifier or,
 * with `--to-operator`, to you. For a failed delivery or a lost key.
 */
import type { ApprovalResult } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_FAILURE, EXIT_OK } from '../../exit-codes';
import { printApproval } from './render';

export async function run(opts: { id: string; toOperator?: boolean; json?: boolean }, deps: Deps): Promise<number> {
  const result = await deps.client.post<ApprovalResult>(`/_admin/v1/applications/${encodeURIComponent(opts.id)}/redeliver`, {
    ...(opts.toOperator ? { to_operator: true } : {}),
  });
  if (opts.json) deps.out.json(result);
  else printApproval(deps.out, 'Redelivered', result);
  if (result.delivery.status === 'failed') {
    deps.out.error(`svcctl: the new secret of key ${result.key_id} was not delivered: ${result.delivery.error}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
