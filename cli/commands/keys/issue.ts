/** `svcctl keys issue [--name N] [--account NAME] [--wallet ADDR] [--endpoint ID]... [--expires 30d] [--limit 60/min]` */
import type { IssuedKey, IssueKeyRequest } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { durationOption, rateLimitOption } from '../../options';
import { keyLines } from './render';

export interface IssueOptions {
  name?: string;
  account?: string;
  wallet?: string;
  endpoint?: string[];
  expires?: string;
  limit?: string;
  json?: boolean;
}

export async function run(opts: IssueOptions, deps: Deps): Promise<number> {
  const body: IssueKeyRequest = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts.account !== undefined) body.account = opts.account;
  if (opts.wallet !== undefined) body.wallet = opts.wallet;
  if (opts.endpoint !== undefined && opts.endpoint.length > 0) body.endpoints = opts.endpoint;
  if (opts.expires !== undefined) body.expires_in_seconds = durationOption('--expires', opts.expires);
  if (opts.limit !== undefined) body.limit = rateLimitOption('--limit', opts.limit);
  const issued = await deps.client.post<IssuedKey>('/_admin/v1/keys', body);
  if (opts.json) {
    deps.out.json(issued);
    return EXIT_OK;
  }
  deps.out.line(`Issued ${issued.id}. The key is shown once; store it now, it cannot be recovered:`);
  deps.out.line();
  deps.out.line(`  ${issued.key}`);
  deps.out.line();
  for (const line of keyLines(issued)) deps.out.line(line);
  return EXIT_OK;
}
