/** `svcctl changelog list [--limit N]`, newest first. */
import { ADMIN_CHANGELOG_DEFAULT_LIMIT, ADMIN_CHANGELOG_MAX_LIMIT, type ChangelogList } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { pageLimit } from '../../options';
import { table } from '../../output';

export async function run(opts: { limit?: string; json?: boolean }, deps: Deps): Promise<number> {
  const limit = opts.limit === undefined ? ADMIN_CHANGELOG_DEFAULT_LIMIT : pageLimit('--limit', opts.limit, ADMIN_CHANGELOG_MAX_LIMIT);
  const answer = await deps.client.get<ChangelogList>(`/_admin/v1/changelog?limit=${limit}`);
  if (opts.json) deps.out.json(answer);
  else
    deps.out.line(
      answer.entries.length === 0
        ? 'No changelog entries.'
        : table(
            ['#', 'AT', 'KIND', 'BY', 'TEXT'],
            answer.entries.map((e) => [e.id, e.at, e.kind, e.author, e.text]),
          ),
    );
  return EXIT_OK;
}
