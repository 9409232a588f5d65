/** `svcctl changelog add TEXT`: an operator notice on the public changelog. */
import type { ChangelogEntry } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';

export async function run(opts: { text: string; json?: boolean }, deps: Deps): Promise<number> {
  const entry = await deps.client.post<ChangelogEntry>('/_admin/v1/changelog', { text: opts.text });
  if (opts.json) deps.out.json(entry);
  else deps.out.line(`Added changelog entry #${entry.id}.`);
  return EXIT_OK;
}
