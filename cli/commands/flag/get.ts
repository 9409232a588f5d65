/** `svcctl flag get NAME` */
import type { FlagView } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { flagOption } from '../../options';

export async function run(opts: { name: string; json?: boolean }, deps: Deps): Promise<number> {
  const flag = await deps.client.get<FlagView>(`/_admin/v1/flags/${flagOption(opts.name)}`);
  if (opts.json) deps.out.json(flag);
  else
    deps.out.line(
      `${flag.name} ${flag.value ? 'on' : 'off'} (set ${flag.updated_at} by ${flag.updated_by}${flag.note ? `: ${flag.note}` : ''})`,
    );
  return EXIT_OK;
}
