/** `svcctl lps list`: every provider's position, by name, and the pool's capital. */
import type { LpList } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { lpsTable, poolCapitalLine } from './render';

export async function run(opts: { json?: boolean }, deps: Deps): Promise<number> {
  const list = await deps.client.get<LpList>('/_admin/v1/lps');
  if (opts.json) deps.out.json(list);
  else {
    deps.out.line(list.providers.length === 0 ? 'No liquidity providers.' : lpsTable(list.providers));
    deps.out.line();
    deps.out.line(poolCapitalLine(list.pool));
  }
  return EXIT_OK;
}
