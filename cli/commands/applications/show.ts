/** `svcctl applications show ID`: answers, priority, key and the delivery log. */
import type { ApplicationDetail } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { applicationLines } from './render';

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  const app = await deps.client.get<ApplicationDetail>(`/_admin/v1/applications/${encodeURIComponent(opts.id)}`);
  if (opts.json) deps.out.json(app);
  else for (const line of applicationLines(app)) deps.out.line(line);
  return EXIT_OK;
}
