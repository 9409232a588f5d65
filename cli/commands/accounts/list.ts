/**
 * `svcctl accounts list [--limit N] [--cursor C]`
 *
 * Without `--limit`/`--cursor` it follows `next_cursor` page by page (1,000 accounts a page)
 * and prints every account. With either, it prints one page and the cursor of the next
 * (`next_cursor` in `--json`).
 */
import { ACCOUNT_LIST_MAX_LIMIT, type AccountList, type AccountView } from '../../../protocol/accounts';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { printList } from '../../pages';
import { pageLimit } from '../../options';
import { accountsTable } from './render';

function pagePath(limit: number, cursor: string | null): string {
  const query = new URLSearchParams({ limit: String(limit) });
  if (cursor !== null) query.set('cursor', cursor);
  return `/_admin/v1/accounts?${query.toString()}`;
}

export async function run(opts: { limit?: string; cursor?: string; json?: boolean }, deps: Deps): Promise<number> {
  const limit = opts.limit === undefined ? ACCOUNT_LIST_MAX_LIMIT : pageLimit('--limit', opts.limit, ACCOUNT_LIST_MAX_LIMIT);
  if (opts.cursor !== undefined && opts.cursor === '') throw new UsageError('--cursor must be a next_cursor from a previous page');

  await printList<AccountList, AccountView>(deps, opts, {
    noun: 'accounts',
    path: (cursor) => pagePath(limit, cursor),
    items: (page) => page.accounts,
    table: accountsTable,
  });
  return EXIT_OK;
}
