/** `svcctl keys show ID` */
import type { KeyView } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { keyLines } from './render';

export async function run(opts: { id: string; json?: boolean }, deps: Deps): Promise<number> {
  const key = await deps.client.get<KeyView>(`/_admin/v1/keys/${encodeURIComponent(opts.id)}`);
  if (opts.json) deps.out.json(key);
  else for (const line of keyLines(key)) deps.out.line(line);
  return EXIT_OK;
}
