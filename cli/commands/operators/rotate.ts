/** `svcctl operators rotate NAME [--grace 1h]`: a new token; the old one stops at once or when the grace ends. */
import type { RotatedOperatorToken } from '../../../protocol/operators';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { durationOption } from '../../options';
import { tokenLines } from './render';

export async function run(opts: { name: string; grace?: string; json?: boolean }, deps: Deps): Promise<number> {
  const body = opts.grace === undefined ? {} : { grace_seconds: opts.grace === '0' ? 0 : durationOption('--grace', opts.grace) };
  const rotated = await deps.client.post<RotatedOperatorToken>(`/_admin/v1/operators/${encodeURIComponent(opts.name)}/rotate`, body);
  if (opts.json) {
    deps.out.json(rotated);
    return EXIT_OK;
  }
  deps.out.line(`Rotated operator ${rotated.name}. The new token is shown once; hand it over now:`);
  tokenLines(deps.out, rotated);
  for (const old of rotated.replaced) {
    deps.out.line(
      Date.parse(old.expires_at) <= Date.parse(rotated.created_at)
        ? `The previous token ${old.token_id} no longer works.`
        : `The previous token ${old.token_id} keeps working until ${old.expires_at}.`,
    );
  }
  if (rotated.replaced.length === 0) deps.out.line('It had no other token that worked.');
  return EXIT_OK;
}
