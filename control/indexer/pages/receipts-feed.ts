/**
 * `/receipts.atom` on the indexer: one entry per settlement batch with its receipt's hash, so
 * feed readers and archives keep a copy of the chain the operator cannot take back. The
 * format and the entries' ids are `../../pages/atom.ts`.
 */
import type { Receipt } from '../../../protocol/receipts';
import { receiptHash } from '../../../protocol/receipts-verify';
import { feedUuid, type AtomFeed } from '../../pages/atom';

/**
 * `/receipts.atom` (indexer): one entry per settlement batch (the latest `FEED_ENTRIES`,
 * newest first), its title and content naming the receipt's hash (the `prev` of the next
 * receipt, the `hash` of a checkpoint at that batch) and the receipt itself as served. A copy
 * saved by a feed reader or an archive is evidence: a batch rewritten later has another hash.
 */
export function receiptsFeed(secret: Buffer, receipts: readonly Receipt[], fallbackUpdated: string, indexerBase: string): AtomFeed {
  return {
    id: feedUuid(secret, 'feed:receipts'),
    title: 'svc settlement receipts',
    subtitle: 'One entry per settlement batch, with the hash of its signed receipt',
    updated: receipts[0]?.settled_at ?? fallbackUpdated,
    self: `${indexerBase}/receipts.atom`,
    alternate: `${indexerBase}/activity`,
    entries: receipts.map((r) => {
      const hash = receiptHash(r);
      return {
        id: feedUuid(secret, `receipt:${r.batch}`),
        title: `Batch ${r.batch}: receipt hash ${hash}`,
        updated: r.settled_at,
        content: `batch ${r.batch}\nhash ${hash}\nreceipt ${indexerBase}/api/receipts/${r.batch}\n${JSON.stringify(r)}`,
        category: 'receipt',
      };
    }),
  };
}
