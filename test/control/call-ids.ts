/**
 * Call ids are UUIDs, stored in lowercase (`canonicalCallId`; PostgreSQL's `uuid` columns,
 * pg migration 10): an id a gateway ships in capitals is the same call as its lowercase
 * spelling on both stores (one row, one settlement, found by either spelling), and a lookup by
 * a string that is not a UUID answers "no such call" rather than failing. On every store.
 */
import t from 'tap';
import { canonicalCallId } from '../../protocol/outcome';
import { verifyCallProof } from '../../protocol/receipts-verify';
import { forEachStore, openTestStore } from '../fixtures/stores';
import { records, seed, settle } from '../fixtures/receipts';

const T_INGEST = Date.UTC(2030, 0, 1, 13);
const NOT_UUIDS = ['', 'nope', 'x'.repeat(128), "'; DROP TABLE outcome_records; --", '018f0000-0000-7000-8000-00000000000g'];

t.test('canonicalCallId: a UUID in lowercase, or null', async (t) => {
  t.equal(canonicalCallId('018F3A2B-0C4D-7E5F-8A6B-7C8D9E0F1A2B'), '018f3a2b-0c4d-7e5f-8a6b-7c8d9e0f1a2b');
  t.equal(canonicalCallId('018f3a2b-0c4d-7e5f-8a6b-7c8d9e0f1a2b'), '018f3a2b-0c4d-7e5f-8a6b-7c8d9e0f1a2b');
  for (const id of NOT_UUIDS) t.equal(canonicalCallId(id), null, JSON.stringify(id.slice(0, 40)));
  t.equal(canonicalCallId('{018f3a2b-0c4d-7e5f-8a6b-7c8d9e0f1a2b}'), null, 'braces are not the wire form');
  t.equal(canonicalCallId('018f3a2b0c4d7e5f8a6b7c8d9e0f1a2b'), null, 'nor is hex without hyphens');
});

t.test('an id in capitals is stored in lowercase, is one call with its lowercase twin, and is found by either', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind, { receipts: true });
    await seed(store);
    const batch = records(12);
    const shouted = batch.map((r, i) => (i % 2 === 0 ? { ...r, call_id: r.call_id.toUpperCase() } : r));
    t.equal(await store.outcomes.ingest(shouted, T_INGEST), 12, 'every call is new');
    t.equal(await store.outcomes.ingest(batch, T_INGEST + 1), 0, 'the lowercase spellings are the same calls');
    t.equal(await store.outcomes.count(), 12);

    const upper = shouted[0]!.call_id;
    const lower = batch[0]!.call_id;
    t.not(upper, lower);
    t.equal((await store.outcomes.byCallId(upper))?.call_id, lower, 'stored in lowercase');
    t.equal((await store.outcomes.byCallId(lower))?.call_id, lower);
    t.equal((await store.publicReads.call(upper))?.call_id, lower, 'the public read finds it by its capitals');
    t.same(await store.receipts.proof(upper), { state: 'unsettled' });

    t.ok((await settle(store)) > 0, 'settled');
    const jwks = await store.receipts.jwks();
    for (const id of [upper, lower]) {
      const found = await store.receipts.proof(id);
      t.equal(found.state, 'settled', `proof of ${id}`);
      if (found.state !== 'settled') continue;
      t.equal(found.proof.leaf.call_id, lower, 'the leaf names the stored id');
      t.same(verifyCallProof(found.proof, jwks, lower).reasons, [], 'and the proof verifies');
    }
    t.ok((await store.ledger.verify()).ok, 'ledger verify: every call in the queue or settled, once');
  });
});

t.test('a lookup by a string that is not a UUID finds nothing, and fails nothing', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    await seed(store);
    await store.outcomes.ingest(records(3), T_INGEST);
    for (const id of NOT_UUIDS) {
      const name = JSON.stringify(id.slice(0, 40));
      t.equal(await store.outcomes.byCallId(id), undefined, `byCallId ${name}`);
      t.equal(await store.publicReads.call(id), null, `publicReads.call ${name}`);
      t.same(await store.receipts.proof(id), { state: 'unknown' }, `receipts.proof ${name}`);
    }
  });
});
