/** `svcctl keys lift ID --limit 600/min --for 2h`: a temporary limit for demos. */
import type { KeyChange } from '../../../protocol/admin';
import { formatRateLimit } from '../../../protocol/units';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { durationOption, rateLimitOption } from '../../options';

export async function run(opts: { id: string; limit: string; for: string; json?: boolean }, deps: Deps): Promise<number> {
  const body = { limit: rateLimitOption('--limit', opts.limit), for_seconds: durationOption('--for', opts.for) };
  const key = await deps.client.post<KeyChange>(`/_admin/v1/keys/${encodeURIComponent(opts.id)}/lift`, body);
  if (opts.json) deps.out.json(key);
  else deps.out.line(`Lifted ${key.id} to ${formatRateLimit(body.limit)} until ${key.lift?.until ?? '?'}.`);
  return EXIT_OK;
}
