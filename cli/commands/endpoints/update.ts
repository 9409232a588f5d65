/** `svcctl endpoints update ID [--upstream URL] [--price N] …`; `--header` replaces all injected headers. */
import type { EndpointChange } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { endpointBody, endpointLines, type EndpointOptions } from './fields';

export async function run(opts: EndpointOptions & { id: string }, deps: Deps): Promise<number> {
  const body = endpointBody(opts);
  if (Object.keys(body).length === 0) throw new UsageError('nothing to update: give at least one option (see --help)');
  const endpoint = await deps.client.patch<EndpointChange>(`/_admin/v1/endpoints/${encodeURIComponent(opts.id)}`, body);
  if (opts.json) deps.out.json(endpoint);
  else {
    deps.out.line(`Updated endpoint ${endpoint.id}.`);
    for (const line of endpointLines(endpoint)) deps.out.line(line);
  }
  return EXIT_OK;
}
