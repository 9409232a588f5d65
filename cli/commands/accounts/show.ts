/** `svcctl accounts show NAME|ID` */
import type { AccountView } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK } from '../../exit-codes';
import { accountLines } from './render';

export async function run(opts: { account: string; json?: boolean }, deps: Deps): Promise<number> {
  const account = await deps.client.get<AccountView>(`/_admin/v1/accounts/${encodeURIComponent(opts.account)}`);
  if (opts.json) deps.out.json(account);
  else for (const line of accountLines(account)) deps.out.line(line);
  return EXIT_OK;
}
