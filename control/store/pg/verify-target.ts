/**
 * The last step of `svcctl store copy`: the database it wrote, opened as control opens it (the
 * PostgreSQL store, with the data dir's receipt signing key and backfill record), checked by
 * both verifiers (`../verify.ts`, written against `Store`, so any store can be checked).
 */
import type { StoreVerifyView } from '../../../protocol/store-copy';
import type { Store } from '../store';
import { verifyStore } from '../verify';
import { openPgStore } from '../open';

/** Opens the store at `url` with the data dir `dataDir`. */
export type StoreOpener = (url: string, dataDir: string) => Promise<Store>;

/** The PostgreSQL store at `url`, with the data dir's signing key, as control opens it (`../open.ts`). */
export const openTargetStore: StoreOpener = (url, dataDir) => openPgStore(url, { dataDir });

/** Both verifiers on the store at `url`; closes it afterwards. */
export async function verifyTarget(url: string, dataDir: string, open: StoreOpener = openTargetStore): Promise<StoreVerifyView> {
  const store = await open(url, dataDir);
  try {
    return await verifyStore(store);
  } finally {
    await store.close();
  }
}
