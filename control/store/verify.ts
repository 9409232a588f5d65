/**
 * Both verifiers on any store, through the `Store` interface alone: the ledger's invariants
 * (`ledger.verify()`, what `svcctl ledger verify` asks control for) and the receipt chain,
 * walked as `svcctl receipts verify` walks it from the indexer's public reads (the same JWKS,
 * totals and receipt pages, read from the store instead). `svcctl store copy` runs them on the
 * database it wrote.
 */
import type { StoreVerifyView } from '../../protocol/store-copy';
import { walkReceiptChain } from '../../protocol/receipts-walk';
import type { Store } from './store';

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
