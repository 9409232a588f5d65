/** `svcctl changelog list [--limit N]`, newest first. */
import type { ChangelogList } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { table } from '../../output';

export async function run(opts: { limit?: string; json?: boolean }, deps: Deps): Promise<number> {
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
  const answer = await deps.client.get<ChangelogList>(`/_admin/v1/changelog?limit=${limit}`);
  if (opts.json) deps.out.json(answer);
  else
    deps.out.line(
      answer.entries.length === 0
        ? 'No changelog entries.'
        : table(['#', 'AT', 'KIND', 'BY', 'TEXT'], answer.entries.map((e) => [e.id, e.at, e.kind, e.author, e.text])),
    );
  return EXIT_OK;
}
