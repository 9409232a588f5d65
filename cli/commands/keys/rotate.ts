/** `svcctl keys rotate ID [--grace 24h]`: a new secret; the old one works until the grace ends. */
import type { IssuedKey } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { durationOption } from '../../options';
import { keyLines } from './render';

export async function run(opts: { id: string; grace?: string; json?: boolean }, deps: Deps): Promise<number> {
  const body = opts.grace === undefined ? {} : { grace_seconds: opts.grace === '0' ? 0 : durationOption('--grace', opts.grace) };
  const issued = await deps.client.post<IssuedKey>(`/_admin/v1/keys/${encodeURIComponent(opts.id)}/rotate`, body);
  if (opts.json) {
    deps.out.json(issued);
    return EXIT_OK;
  }
  const old = issued.secrets.find((s) => s.expires_at !== null);
  deps.out.line(`Rotated ${issued.id}. The new key is shown once; store it now:`);
  deps.out.line();
  deps.out.line(`  ${issued.key}`);
  deps.out.line();
  deps.out.line(
    old ? `The previous secret (${old.prefix}…) keeps working until ${old.expires_at}.` : 'The previous secret no longer works.',
  );
  for (const line of keyLines(issued)) deps.out.line(line);
  return EXIT_OK;
}
