/**
 * Admin changes run in `store.mutate`, under the store's writer lock: one at a time, across every
 * control process on the database. What a handler read before that (is the key active, does the
 * flag already hold the value, does the endpoint exist) may be stale by then: another request,
 * through this control or another one, may have changed the same thing in between. So whatever
 * decides a change is read again inside the mutation. A change found already made there throws
 * {@link AlreadyDone}, which rolls the transaction back (no audit row, no state version), and
 * {@link mutateUnlessDone} answers null for it; a change that is no longer allowed throws its
 * `SvcError` there, with the same effect.
 */
import { CodedError, hasCode } from '../protocol/coded-error';
import type { Audit, MutationContext, Store, StoreTables } from './store/index';

export class AlreadyDone extends CodedError {
  override readonly code = 'SVC_ERR_ALREADY_DONE';

  constructor() {
    super('the change is already made');
  }
}

/** `store.mutate(ctx, audit, fn)`, or null when `fn` found the change already made ({@link AlreadyDone}). */
export async function mutateUnlessDone<T>(
  store: Store,
  ctx: MutationContext,
  audit: Audit,
  fn: (tx: StoreTables) => Promise<T>,
): Promise<{ result: T; version: number } | null> {
  try {
    return await store.mutate(ctx, audit, fn);
  } catch (err) {
    if (hasCode(err, 'SVC_ERR_ALREADY_DONE')) return null;
    throw err;
  }
}
