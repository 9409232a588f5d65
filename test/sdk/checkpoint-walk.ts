/**
 * Where the SDK's checkpoint checks start their walk. A client walks the receipt history from
 * batch 1 the first time, and after that only from a checkpoint whose whole history it verified
 * itself (same batch and hash, keys all still in the keyring): the second `verifyRefund` with a
 * checkpoint store reads the receipts added since, not the chain again. Anything else is walked
 * from batch 1: a new client on the same store (which catches a receipt changed under the
 * checkpoint that the first client, by design, no longer reads), a checkpoint saved by someone
 * else, one of the same batch with another hash, a keyring without a key it checked with.
 *
 * The indexer is a `fetch` serving a chain built in memory (`test/fixtures/receipt-chain.ts`),
 * recording each consistency read. Runs the built package (`npm run build` first).
 */
import t from 'tap';
import { HistoryRewrittenError, MemoryCheckpointStore, SvcClient, type FetchLike } from 'svc-monitor-sdk';
import { toHex } from '../../protocol/merkle';
import { leafHashOf, type ReceiptFields, type ReceiptLeafFields } from '../../protocol/receipts-verify';
import { checkpointAt, extendChain, newKey, rechain, type TestKey } from '../fixtures/receipt-chain';
import { rejection } from '../fixtures/rejection';

const CALL_ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const LEAF: ReceiptLeafFields = {
  batch: 1,
  call_id: CALL_ID,
  provider: 'weather',
  outcome: 'server_error',
  premium: 0,
  refund: 2150,
  clamp: null,
};
const key = newKey();

/** An indexer over `chain`, its head's checkpoint signed by `signer`; `take()` answers the consistency reads' bounds. */
function indexer(chain: ReceiptFields[], signer: TestKey = key, keys: TestKey[] = [key]) {
  const state = { chain, head: checkpointAt(chain, chain.length, signer), jwks: { keys: keys.map((k) => k.jwk) } };
  const reads: [number, number][] = [];
  const json = (body: unknown) => Promise.resolve(new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } }));
  const fetch: FetchLike = (url) => {
    const u = new URL(url);
    if (u.pathname === `/api/calls/${CALL_ID}/proof`) {
      return json({ leaf: LEAF, leaf_index: 0, tree_size: 1, audit_path: [], receipt: state.chain[0] });
    }
    if (u.pathname === '/api/receipts/keys') return json(state.jwks);
    if (u.pathname === '/api/receipts/checkpoint') return json(state.head);
    if (u.pathname === '/api/receipts/consistency') {
      const [from, to] = [Number(u.searchParams.get('from')), Number(u.searchParams.get('to'))];
      reads.push([from, to]);
      return json({ receipts: state.chain.slice(from - 1, to) });
    }
    return Promise.resolve(new Response('{}', { status: 404 }));
  };
  /** Serve `next` from now on, its head signed by `signer`. */
  const serve = (next: ReceiptFields[], by: TestKey = signer) => {
    state.chain = next;
    state.head = checkpointAt(next, next.length, by);
  };
  /** The reads made since the last call, then forgotten. */
  const take = () => reads.splice(0);
  return { state, fetch, serve, take, url: 'http://indexer.test' };
}

/** Batches 1..n signed by `signer`, batch 1 holding the call of `LEAF` alone. */
const grown = (chain: ReceiptFields[], n: number, signer: TestKey = key) => extendChain(chain, n, signer);
const chainOf = (n: number, signer: TestKey = key) =>
  grown(extendChain([], 1, signer, { root: toHex(leafHashOf(LEAF)), tree_size: 1 }), n - 1, signer);
const edited = (chain: ReceiptFields[], batch: number, change: Partial<ReceiptFields>) =>
  chain.map((r) => (r.batch === batch ? { ...r, ...change } : r));
const ms = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

t.test('the second verifyRefund on the same client reads only the receipts added since', async (t) => {
  const idx = indexer(chainOf(3_000));
  const store = new MemoryCheckpointStore();
  const svc = new SvcClient({ indexerUrl: idx.url, fetch: idx.fetch, checkpointStore: store });

  let started = process.hrtime.bigint();
  t.ok((await svc.verifyRefund(CALL_ID)).ok, 'the refund verifies');
  const firstMs = ms(started);
  t.same(
    idx.take(),
    [
      [1, 1000],
      [1001, 2000],
      [2001, 3000],
    ],
    'the first call walks the served checkpoint’s history from batch 1',
  );
  t.match(await store.load(), { batch: 3000, hash: idx.state.head.hash });

  idx.serve(grown(idx.state.chain, 500));
  started = process.hrtime.bigint();
  t.ok((await svc.verifyRefund(CALL_ID)).ok);
  const secondMs = ms(started);
  t.same(idx.take(), [[3000, 3500]], 'the second reads from the checkpoint it verified: 501 receipts in one read');
  t.match(await store.load(), { batch: 3500 }, 'and saves the new one');

  t.ok((await svc.verifyRefund(CALL_ID)).ok);
  t.same(idx.take(), [[3500, 3500]], 'nothing new: the checkpoint’s own receipt, still hashing to it');
  t.match(await svc.verifyConsistency(idx.state.head), { batch: 3500 }, 'verifyConsistency remembers the same way');
  t.same(idx.take(), [[3500, 3500]]);
  t.comment(
    `verifyRefund with a checkpoint store: first call ${firstMs.toFixed(0)} ms (3000 receipts, 3 reads), second ${secondMs.toFixed(0)} ms (501 receipts, 1 read)`,
  );
});

t.test('a new client on the same store walks from batch 1 and catches a receipt changed under the checkpoint', async (t) => {
  const idx = indexer(chainOf(1_500));
  const store = new MemoryCheckpointStore();
  const first = new SvcClient({ indexerUrl: idx.url, fetch: idx.fetch, checkpointStore: store });
  t.ok((await first.verifyRefund(CALL_ID)).ok);
  t.equal(idx.take().length, 2, 'its history from batch 1');

  idx.serve(edited(idx.state.chain, 76, { refunds: 0 })); // changed in the database, not signed again
  t.ok((await first.verifyRefund(CALL_ID)).ok, 'the same client does not read below the checkpoint it verified');
  t.same(idx.take(), [[1500, 1500]]);

  const second = new SvcClient({ indexerUrl: idx.url, fetch: idx.fetch, checkpointStore: store });
  const err = await rejection(second.verifyRefund(CALL_ID));
  t.type(err, HistoryRewrittenError);
  t.match(err, { code: 'svc_sdk_history_rewritten', failure: 'receipt_signature', batch: 76 }, 'a new client catches it');
  t.same(idx.take(), [[1, 1000]], 'walking from batch 1 (and stopping at the change)');
  t.match(await store.load(), { batch: 1500 }, 'the store keeps the checkpoint');
});

t.test('a checkpoint this client did not verify itself is walked from batch 1', async (t) => {
  const idx = indexer(chainOf(1_500));
  const honest = idx.state.chain;
  const store = new MemoryCheckpointStore();
  const svc = new SvcClient({ indexerUrl: idx.url, fetch: idx.fetch, checkpointStore: store });
  t.ok((await svc.verifyRefund(CALL_ID)).ok);
  idx.take();

  // Saved by hand (`curl …/api/receipts/checkpoint` earlier): an older one, and a change under it.
  await store.save(checkpointAt(honest, 1000, key));
  idx.serve(edited(honest, 76, { refunds: 0 }));
  t.match(await rejection(svc.verifyRefund(CALL_ID)), { failure: 'receipt_signature', batch: 76 }, 'caught');
  t.same(idx.take(), [[1, 1000]], 'from batch 1');

  // The batch it verified, another hash: a fork signed with the key, consistent on its own.
  const fork = rechain(edited(honest, 1400, { refunds: 0 }), 1400, key);
  idx.serve(fork);
  await store.save(idx.state.head);
  t.ok((await svc.verifyRefund(CALL_ID)).ok);
  t.same(
    idx.take(),
    [
      [1, 1000],
      [1001, 1500],
    ],
    'same batch, another hash: from batch 1',
  );
  t.ok((await svc.verifyRefund(CALL_ID)).ok);
  t.same(idx.take(), [[1500, 1500]], 'walked from batch 1, it is one this client verified: from it next time');
});

t.test('a keyring without a key the history was checked with walks from batch 1', async (t) => {
  const next = newKey();
  const idx = indexer(chainOf(1_000), next, [key, next]);
  idx.serve(grown(idx.state.chain, 500, next)); // the key rotated at batch 1001
  const svc = new SvcClient({ indexerUrl: idx.url, fetch: idx.fetch });
  const head = idx.state.head;
  t.match(await svc.verifyConsistency(head), { batch: 1500 });
  t.equal(idx.take().length, 2, 'from batch 1, with both keys');
  t.match(await svc.verifyConsistency(head), { batch: 1500 });
  t.same(idx.take(), [[1500, 1500]], 'the same keys: from the checkpoint it verified');
  const err = await rejection(svc.verifyConsistency(head, { jwks: { keys: [{ ...next.jwk, use: 'sig' }] } }));
  t.match(err, { failure: 'receipt_signature', batch: 1, detail: /not in the JWKS/ }, 'the old key gone: its receipts fail again');
  t.same(idx.take(), [[1, 1000]]);
});
