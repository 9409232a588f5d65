/** `svcctl endpoints list` */
import type { EndpointList } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { endpointsTable } from './fields';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.get<EndpointList>('/_admin/v1/endpoints');
  if (opts.json) deps.out.json(answer);
  else deps.out.line(answer.endpoints.length === 0 ? 'No endpoints.' : endpointsTable(answer.endpoints));
  return EXIT_OK;
}
