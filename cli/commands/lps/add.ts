/**
 * `svcctl lps add NAME`: a liquidity provider, holding no shares until its first deposit. With
 * `money.approvals: 2` it waits for a second operator: the pending request is printed.
 */
import { LpName, type CreateLpRequest, type LpView } from '../../../protocol/lps';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { postMoney } from '../approvals/render';
import { lpAddedLines } from './render';

export async function run(opts: { name: string; json?: boolean }, deps: Deps): Promise<number> {
  const name = LpName.safeParse(opts.name);
  if (!name.success) throw new UsageError(`NAME ${name.error.issues[0]!.message}`);
  const body: CreateLpRequest = { name: name.data };
  const added = await postMoney<LpView>(deps, '/_admin/v1/lps', body, opts.json);
  if (added === null) return EXIT_OK;
  if (opts.json) deps.out.json(added);
  else for (const line of lpAddedLines(added)) deps.out.line(line);
  return EXIT_OK;
}
