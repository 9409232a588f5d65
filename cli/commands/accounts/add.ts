/** `svcctl accounts add NAME [--low AMOUNT]`. AMOUNT: see `cli/money.ts`. */
import { AccountName, type AccountChange, type CreateAccountRequest } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { parseAmount } from '../../options';
import { accountLines } from './render';

export async function run(opts: { name: string; low?: string; json?: boolean }, deps: Deps): Promise<number> {
  const name = AccountName.safeParse(opts.name);
  if (!name.success) throw new UsageError(`NAME ${name.error.issues[0]!.message}`);
  const body: CreateAccountRequest = { name: name.data };
  if (opts.low !== undefined) body.low = parseAmount('--low', opts.low);
  const added = await deps.client.post<AccountChange>('/_admin/v1/accounts', body);
  if (opts.json) deps.out.json(added);
  else {
    deps.out.line(`Added account ${added.name} (${added.id}). Issue keys into it with: svcctl keys issue --account ${added.name}`);
    for (const line of accountLines(added)) deps.out.line(line);
  }
  return EXIT_OK;
}
