/**
 * The store cannot be reached: what every listener answers while control's database is away
 * (PostgreSQL stopped, restarting, or out of reach), instead of a 500 that names nothing.
 *
 * Thrown from the store layer (`pg/unreachable.ts` tells these failures from the others), it
 * is 503 `svc_store_unavailable` with `Retry-After` on every listener. The admin and sync API's
 * detail names the store (its URL's password masked) and carries it as the `store` extension
 * member, for `svcctl status`; the public API and the indexer say only that the data is
 * temporarily unavailable (`publicDetail`): they never show where the database is.
 */
import { SvcError } from '../../protocol/errors';

/** Seconds a caller is asked to wait (`Retry-After`) before trying again. @default 5 */
export const STORE_RETRY_AFTER_S = 5;

/** The store that cannot be reached, as the admin and sync API's problem carries it (`store`). */
export interface UnreachableStore {
  kind: 'postgres';
  /** The database URL, its password masked (`maskDatabaseUrl`). */
  url: string;
  /** What failed, as the driver said it, any secret of the URL taken out (`connect ECONNREFUSED 127.0.0.1:5432`). */
  reason: string;
}

/** What the public API and the indexer say instead of the detail. */
export const STORE_UNAVAILABLE_PUBLIC_DETAIL =
  'The data is temporarily unavailable: the database cannot be reached. Try again in a few seconds.';

export class StoreUnavailableError extends SvcError {
  readonly store: UnreachableStore;

  constructor(store: UnreachableStore, cause?: unknown) {
    super('svc_store_unavailable', `the PostgreSQL store at ${store.url} cannot be reached (${store.reason}); try again in a few seconds`, {
      headers: { 'retry-after': String(STORE_RETRY_AFTER_S) },
      extra: { store },
      publicDetail: STORE_UNAVAILABLE_PUBLIC_DETAIL,
      cause,
    });
    this.name = 'StoreUnavailableError';
    this.store = store;
  }
}
