/** `svcctl endpoints remove ID` */
import type { EndpointRemoved } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.delete<EndpointRemoved>(`/_admin/v1/endpoints/${encodeURIComponent(opts.id)}`);
  if (opts.json) deps.out.json(answer);
  else deps.out.line(`Removed endpoint ${answer.id}; gateways answer 404 for it from state version ${answer.version}.`);
  return EXIT_OK;
}
