/**
 * The whole receipt chain walked from a source that hands out receipts in batch order: the
 * indexer's public reads (`svcctl receipts verify`) or a store (`svcctl store copy`, checking
 * the database it wrote). Every receipt goes through `ChainVerifier`, then their sums are held
 * against the source's totals. The first problem ends the walk.
 */
import { ChainVerifier, ReceiptKeyring, type ChainProblem, type ReceiptFields } from './receipts-verify';

export interface ReceiptChainSource {
  /** Settled batches and the sums of their refunds and premiums (`/api/stats`' totals). */
  totals(): Promise<{ batches: number; refunds: number; premiums: number }>;
  /** Up to `limit` receipts after batch `after`, ascending; `next_after` null at the end. */
  page(after: number, limit: number): Promise<{ receipts: readonly ReceiptFields[]; next_after: number | null }>;
}

export interface ReceiptChainWalk {
  keyring: ReceiptKeyring;
  chain: ChainVerifier;
  problem: ChainProblem | null;
}

/** Walk the chain of `source` against the keys of `jwks`, `pageSize` receipts per read. */
export async function walkReceiptChain(jwks: unknown, source: ReceiptChainSource, pageSize: number): Promise<ReceiptChainWalk> {
  const keyring = new ReceiptKeyring(jwks);
  const chain = new ChainVerifier(keyring);
  if (keyring.size === 0)
    return {
      keyring,
      chain,
      problem: {
        batch: null,
        reason: `the JWKS holds no usable Ed25519 key${keyring.problems.length > 0 ? ` (${keyring.problems[0]})` : ''}`,
      },
    };
  // Totals first: receipts are only ever appended, so the chain read afterwards covers them.
  const totals = await source.totals();
  let after = 0;
  let problem: ChainProblem | null = null;
  while (problem === null && chain.count < totals.batches) {
    const page = await source.page(after, Math.min(pageSize, totals.batches - chain.count));
    for (const receipt of page.receipts) {
      if (chain.count >= totals.batches) break;
      problem = chain.push(receipt);
      if (problem !== null) break;
    }
    const last = page.receipts[page.receipts.length - 1];
    if (page.next_after === null || last === undefined) break;
    after = page.next_after;
  }
  problem ??= chain.checkTotals(totals);
  return { keyring, chain, problem };
}
