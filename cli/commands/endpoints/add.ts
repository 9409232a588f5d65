/** `svcctl endpoints add ID --upstream URL [--methods POST,GET] [--price N] … [--header 'Name: value']...` */
import type { EndpointChange } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { endpointBody, endpointLines, type EndpointOptions } from './fields';

export async function run(opts: EndpointOptions & { id: string }, deps: Deps): Promise<number> {
  if (opts.upstream === undefined) throw new UsageError('--upstream URL is required');
  const endpoint = await deps.client.post<EndpointChange>('/_admin/v1/endpoints', { id: opts.id, ...endpointBody(opts) });
  if (opts.json) deps.out.json(endpoint);
  else {
    deps.out.line(`Added endpoint ${endpoint.id}: /v1/${endpoint.id}/… → ${endpoint.upstream}`);
    for (const line of endpointLines(endpoint)) deps.out.line(line);
  }
  return EXIT_OK;
}
