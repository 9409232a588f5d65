/**
 * The manual pause of the coverage pool (docs/money.md, "Pool capital", "Pause"): an operator's
 * `svcctl pool pause` / `resume` (`POST /_admin/v1/pool/pause|resume`, admin/pool-pause.ts)
 * kept in the `meta` table, so it survives a restart and every control on a shared database
 * reads the same. While it is on, calls keep flowing but are not covered. Whatever decides
 * coverage reads it here, whichever feature folder it lives in.
 */
import type { StoreTables } from './store';

/** `meta` row holding an operator's pause of coverage: 1 paused, 0 (or no row) not. */
export const POOL_PAUSED_META = 'pool_paused';

/** Whether an operator paused coverage. */
export interface ManualPause {
  paused: boolean;
}

/**
 * The operator's pause as the database holds it now: read from `store`, or from a transaction's
 * tables (`store.mutate`/`store.read`'s `tx`) to decide inside it.
 */
export async function manualPause(store: Pick<StoreTables, 'meta'>): Promise<ManualPause> {
  return { paused: (await store.meta(POOL_PAUSED_META)) === 1 };
}
