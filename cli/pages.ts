/** Paged lists of the admin API (`next_cursor`), read whole. */
import type { Deps } from './deps';
import { CliError } from './exit-codes';

/**
 * Every item of a paged list: the page at `path(null)`, then at `path(next_cursor)` until control
 * answers `next_cursor: null`. A cursor answered twice stops it (`noun` names the items).
 */
export async function allPages<P extends { next_cursor: string | null }, T>(
  deps: Deps,
  path: (cursor: string | null) => string,
  items: (page: P) => readonly T[],
  noun: string,
): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | null = null;
  do {
    const page: P = await deps.client.get<P>(path(cursor));
    all.push(...items(page));
    if (page.next_cursor !== null && page.next_cursor === cursor) {
      throw new CliError(`control answered the same next_cursor twice; stopped after ${all.length} ${noun}`);
    }
    cursor = page.next_cursor;
  } while (cursor !== null);
  return all;
}

/** How `svcctl <noun> list` reads and prints one paged admin list. */
export interface PagedList<P extends { next_cursor: string | null }, T> {
  /** The items' field in the page, which names them in messages too (`accounts`, `keys`). */
  noun: string;
  path: (cursor: string | null) => string;
  items: (page: P) => readonly T[];
  table: (items: readonly T[]) => string;
}

/**
 * `svcctl <noun> list`'s output. With `--limit` or `--cursor`, one page and the cursor of the
 * next (`next_cursor` in `--json`); without, every item, page by page ({@link allPages}).
 */
export async function printList<P extends { next_cursor: string | null }, T>(
  deps: Deps,
  opts: { limit?: string; cursor?: string; json?: boolean },
  list: PagedList<P, T>,
): Promise<void> {
  if (opts.limit !== undefined || opts.cursor !== undefined) {
    const page = await deps.client.get<P>(list.path(opts.cursor ?? null));
    const items = list.items(page);
    if (opts.json) deps.out.json({ [list.noun]: items, next_cursor: page.next_cursor });
    else {
      deps.out.line(items.length === 0 ? `No ${list.noun} on this page.` : list.table(items));
      if (page.next_cursor !== null) deps.out.line(`next page: --cursor ${page.next_cursor}`);
    }
    return;
  }
  const all = await allPages(deps, list.path, list.items, list.noun);
  if (opts.json) deps.out.json({ [list.noun]: all, next_cursor: null });
  else deps.out.line(all.length === 0 ? `No ${list.noun}.` : list.table(all));
}
