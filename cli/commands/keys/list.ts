/**
 * `svcctl keys list [--status active|expired|revoked] [--limit N] [--cursor C]`
 *
 * Without `--limit`/`--cursor` it follows `next_cursor` page by page (1,000 keys a page) until
 * control says there is no more, and prints every key. With either, it prints one page and
 * the cursor of the next (`next_cursor` in `--json`).
 */
import { KEY_LIST_MAX_LIMIT, KEY_STATUSES, type KeyList, type KeyView } from '../../../protocol/admin';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';
import { printList } from '../../pages';
import { pageLimit } from '../../options';
import { keysTable } from './render';

export interface ListOptions {
  status?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

function pagePath(status: string | undefined, limit: number, cursor: string | null): string {
  const query = new URLSearchParams();
  if (status !== undefined) query.set('status', status);
  query.set('limit', String(limit));
  if (cursor !== null) query.set('cursor', cursor);
  return `/_admin/v1/keys?${query.toString()}`;
}

export async function run(opts: ListOptions, deps: Deps): Promise<number> {
  if (opts.status !== undefined && !(KEY_STATUSES as readonly string[]).includes(opts.status)) {
    throw new UsageError(`--status must be one of ${KEY_STATUSES.join(', ')}`);
  }
  const limit = opts.limit === undefined ? KEY_LIST_MAX_LIMIT : pageLimit('--limit', opts.limit, KEY_LIST_MAX_LIMIT);
  if (opts.cursor !== undefined && opts.cursor === '') throw new UsageError('--cursor must be a next_cursor from a previous page');

  await printList<KeyList, KeyView>(deps, opts, {
    noun: 'keys',
    path: (cursor) => pagePath(opts.status, limit, cursor),
    items: (page) => page.keys,
    table: keysTable,
  });
  return EXIT_OK;
}
