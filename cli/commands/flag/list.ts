/** `svcctl flag list` */
import type { FlagList } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { table } from '../../output';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const answer = await deps.client.get<FlagList>('/_admin/v1/flags');
  if (opts.json) deps.out.json(answer);
  else
    deps.out.line(
      table(
        ['FLAG', 'VALUE', 'UPDATED', 'BY', 'NOTE'],
        answer.flags.map((f) => [f.name, f.value ? 'on' : 'off', f.updated_at, f.updated_by, f.note]),
      ),
    );
  return EXIT_OK;
}
