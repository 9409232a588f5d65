/**
 * The last step of `svcctl store copy`: the database it wrote, opened as control opens it (the
 * PostgreSQL store, with the data dir's receipt signing key and backfill record), checked by
 * both verifiers, through the `Store` interface alone (so any store can be checked): the
 * ledger's invariants (`ledger.verify()`, what `svcctl ledger verify` asks control for) and the
 * receipt chain, walked as `svcctl receipts verify` walks it from the indexer's public reads
 * (the same JWKS, totals and receipt pages, read from the store instead).
 */
import type { ReceiptsFactory } from '../../../control/store/receipts';
import type { Store } from '../../../control/store/store';
import { openPgStore } from '../../../control/store/open';
import type { StoreVerifyView } from '../../../protocol/store-copy';
import { walkReceiptChain } from '../../../protocol/receipts-walk';

/** Receipts read per page. @default 1000 */
export const VERIFY_RECEIPTS_PAGE = 1_000;

export async function verifyStore(store: Store): Promise<StoreVerifyView> {
  const ledger = await store.ledger.verify();
  const { keyring, chain, problem } = await walkReceiptChain(
    await store.receipts.jwks(),
    {
      totals: async () => {
        const t = await store.ledger.totals();
        return { batches: t.settled_batches, refunds: t.total_refunds, premiums: t.total_premiums };
      },
      page: async (after, limit) => {
        const receipts = await store.receipts.page(after, limit);
        const last = receipts[receipts.length - 1];
        return { receipts, next_after: receipts.length === limit && last !== undefined ? last.batch : null };
      },
    },
    VERIFY_RECEIPTS_PAGE,
  );
  const receipts = {
    ok: problem === null,
    receipts: chain.count,
    keys: keyring.size,
    refunds: chain.refunds,
    premiums: chain.premiums,
    first_bad_batch: problem?.batch ?? null,
    reason: problem?.reason ?? null,
    key_problems: keyring.problems,
  };
  return { ok: ledger.ok && receipts.ok, ledger, receipts };
}

/** Opens the store at `url` with the data dir `dataDir`. */
export type StoreOpener = (url: string, dataDir: string) => Promise<Store>;

/** The PostgreSQL store at a URL, with the data dir's signing key and `receiptsCore`, as control opens it (`control/store/open.ts`). */
export const pgOpener =
  (receiptsCore: ReceiptsFactory): StoreOpener =>
  (url, dataDir) =>
    openPgStore(url, { dataDir, receiptsCore });

/** Both verifiers on the store at `url`; closes it afterwards. */
export async function verifyTarget(url: string, dataDir: string, open: StoreOpener): Promise<StoreVerifyView> {
  const store = await open(url, dataDir);
  try {
    return await verifyStore(store);
  } finally {
    await store.close();
  }
}
