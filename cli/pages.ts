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
