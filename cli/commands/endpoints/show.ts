/** `svcctl endpoints show ID` */
import type { EndpointView } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { endpointLines } from './fields';

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  const endpoint = await deps.client.get<EndpointView>(`/_admin/v1/endpoints/${encodeURIComponent(opts.id)}`);
  if (opts.json) deps.out.json(endpoint);
  else for (const line of endpointLines(endpoint)) deps.out.line(line);
  return EXIT_OK;
}
