/**
 * `svcctl applications approve ID [--endpoint ID]... [--expires 30d]`: issue a key bound to
 * the application and deliver it. Exit 1 when the delivery failed (the application stays
 * approved; the answer says what to do next).
 */
import type { ApprovalResult, ApproveApplicationRequest } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_FAILURE, EXIT_OK } from '../../exit-codes';
import { durationOption } from '../../options';
import { printApproval } from './render';

export interface ApproveOptions {
  id: string;
  endpoint?: string[];
  expires?: string;
  json?: boolean;
}

export async function run(opts: ApproveOptions, deps: Deps): Promise<number> {
  const body: ApproveApplicationRequest = {};
  if (opts.endpoint !== undefined && opts.endpoint.length > 0) body.endpoints = opts.endpoint;
  if (opts.expires !== undefined) body.expires_in_seconds = durationOption('--expires', opts.expires);
  const result = await deps.client.post<ApprovalResult>(`/_admin/v1/applications/${encodeURIComponent(opts.id)}/approve`, body);
  if (opts.json) deps.out.json(result);
  else printApproval(deps.out, 'Approved', result);
  if (result.delivery.status === 'failed') {
    deps.out.error(`svcctl: application ${result.application.id} is approved but its key was not delivered: ${result.delivery.error}`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
