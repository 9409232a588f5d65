/**
 * The agent's own account on the public API ({api_url}), read with the client's beta key:
 * `GET /api/v1/account[?window=]` and `GET /api/v1/account/calls` page after page. The
 * requests go through `SvcClient`'s read helper (retries, `If-None-Match`); this module only
 * says which paths to read and how to follow a newest-first list's pages (`activity()`'s too).
 */
import type { AccountWindowName } from './generated/wire';

export interface AccountReadOptions {
  signal?: AbortSignal;
  /** Deadline for the read, retries included. */
  timeoutMs?: number;
}

export interface AccountOptions extends AccountReadOptions {
  /** The window the counts and sums cover, ending now. @default '24h' */
  window?: AccountWindowName;
}

export interface AccountCallsOptions extends AccountReadOptions {
  /** Calls per page, 1 to 1000 (the server's default when absent). */
  limit?: number;
  /** Start below this point: a `next_before` cursor or an ISO 8601 time. */
  before?: string;
}

/** `/api/v1/account` with the window asked for. */
export function accountPath(options: AccountOptions): string {
  return options.window === undefined ? '/api/v1/account' : `/api/v1/account?window=${encodeURIComponent(options.window)}`;
}

/**
 * The pages of a newest-first list (`/api/activity`, `/api/v1/account/calls`) at `path`,
 * following `next_before` until the last page (or a cursor seen before).
 */
export function pagesBefore<P extends { next_before: string | null }>(
  path: string,
  read: (path: string) => Promise<P>,
  options: { limit?: number | undefined; before?: string | undefined },
): AsyncIterableIterator<P> {
  return (async function* pages() {
    let before = options.before ?? null;
    const seen = new Set<string>();
    for (;;) {
      const query = new URLSearchParams();
      if (options.limit !== undefined) query.set('limit', String(options.limit));
      if (before !== null) query.set('before', before);
      const search = query.toString();
      const page = await read(`${path}${search ? `?${search}` : ''}`);
      yield page;
      if (page.next_before === null || seen.has(page.next_before)) return;
      seen.add(page.next_before);
      before = page.next_before;
    }
  })();
}
