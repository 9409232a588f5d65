/**
 * `verifyConsistency` (protocol/receipts-consistency.ts) checks the history before a saved
 * checkpoint too, not only the receipts after it. A chain of 120 receipts is built here with
 * node:crypto, a checkpoint saved at batch 96, and the served history tampered with as someone
 * with the database (and, for some, the signing key) could: every tampering fails with its
 * `failure` code, naming the batch. `{ from: 'checkpoint' }` (for a caller that verified the
 * saved checkpoint's history itself) reads from the saved batch on, and still catches every
 * change from there. Then the cost: a walk is the whole chain, 1000 receipts a read, measured
 * at 10 000 receipts, against the walk from a checkpoint at 9000.
 */
import t from 'tap';
import { CONSISTENCY_MAX_RECEIPTS, verifyConsistency, type ConsistencyFailure } from '../../protocol/receipts-consistency';
import { receiptHash, type ReceiptFields, type UnsignedReceipt } from '../../protocol/receipts-verify';
import * as fixture from '../fixtures/receipt-chain';

const key = fixture.newKey();
const jwks = { keys: [key.jwk] };
const signed = (fields: UnsignedReceipt): ReceiptFields => fixture.signedBy(key, fields);
const unsignedOf = (batch: number, prev: string): UnsignedReceipt => fixture.unsignedOf(batch, prev, key.jwk.kid);
const chainOf = (n: number): ReceiptFields[] => fixture.chainOf(n, key);
const rechain = (chain: ReceiptFields[], from: number): ReceiptFields[] => fixture.rechain(chain, from, key);
const checkpointAt = (chain: ReceiptFields[], batch: number) => fixture.checkpointAt(chain, batch, key);
const served = fixture.servedRange;

const honest = chainOf(120);
const saved = checkpointAt(honest, 96);

t.test('an untouched history verifies from batch 1, through the saved checkpoint, to the served one', async (t) => {
  const { range, reads } = served(honest);
  const verdict = await verifyConsistency(saved, checkpointAt(honest, 120), range, jwks);
  t.same(verdict, { ok: true, failure: null, batch: null, expected: null, served: null, reason: null, receipts: 120 });
  t.same(reads, [[1, 120]], 'one read: every receipt from batch 1');
  t.match(
    await verifyConsistency(saved, saved, served(honest).range, jwks),
    { ok: true, receipts: 96 },
    'a checkpoint checks against itself',
  );
});

t.test('every tampering with the history is caught, before the checkpoint as after it', async (t) => {
  const cases: { name: string; chain: ReceiptFields[]; head?: number; failure: ConsistencyFailure; batch: number; reason: RegExp }[] = [];
  const edited = (batch: number, change: Partial<ReceiptFields>) => honest.map((r) => (r.batch === batch ? { ...r, ...change } : r));

  // 1. A receipt under the checkpoint changed, not signed again.
  cases.push({
    name: 'batch 76 changed without re-signing',
    chain: edited(76, { refunds: 0 }),
    failure: 'receipt_signature',
    batch: 76,
    reason: /^batch 76: the signature does not verify/,
  });
  // 2. Two receipts under the checkpoint swapped (each keeps its own signature and batch number).
  const swapped = [...honest];
  [swapped[49], swapped[50]] = [honest[50]!, honest[49]!];
  cases.push({
    name: 'batches 50 and 51 swapped',
    chain: swapped,
    failure: 'receipt_out_of_place',
    batch: 50,
    reason: /batch 50: the indexer served batch 51 in its place/,
  });
  // 3. Swapped again, but renumbered into each other's place: the signatures then fail.
  const renumbered = [...honest];
  renumbered[49] = { ...honest[50]!, batch: 50 };
  renumbered[50] = { ...honest[49]!, batch: 51 };
  cases.push({
    name: "batches 50 and 51 swapped under each other's numbers",
    chain: renumbered,
    failure: 'receipt_link',
    batch: 50,
    reason: /batch 50: prev does not link to the receipt before it/,
  });
  // 4. Changed and re-signed with the server's key, the chain after it left as it was.
  cases.push({
    name: 'batch 76 changed and re-signed',
    chain: honest.map((r) => (r.batch === 76 ? signed({ ...unsignedOf(76, r.prev), refunds: 0 }) : r)),
    failure: 'receipt_link',
    batch: 77,
    reason: /batch 77: prev does not link to the receipt before it \(batch 76 or this one was changed\)/,
  });
  // 5. Changed, re-signed and every later receipt re-chained and re-signed: it all verifies, but
  // the checkpoint's batch no longer hashes to the saved hash; a fresh checkpoint is signed over it.
  const rewritten = rechain(edited(76, { refunds: 0 }), 76);
  cases.push({
    name: 'batch 76 changed and the chain re-signed up to the head',
    chain: rewritten,
    failure: 'saved_checkpoint_mismatch',
    batch: 96,
    reason: new RegExp(`^batch 96 is not the one the saved checkpoint states: its hash was ${saved.hash}`),
  });
  // 6. A receipt under the checkpoint deleted, the rest served.
  cases.push({
    name: 'batch 40 deleted',
    chain: honest.filter((r) => r.batch !== 40),
    failure: 'receipts_missing',
    batch: 1,
    reason: /the indexer served 119 receipts for batches 1 to 120/,
  });
  // 7. The first receipt changed: it must start from 64 zeros.
  cases.push({
    name: "batch 1's prev changed and re-signed",
    chain: rechain(
      honest.map((r) => (r.batch === 1 ? { ...r, prev: 'ab'.repeat(32) } : r)),
      2,
    ).map((r) => (r.batch === 1 ? signed({ ...unsignedOf(1, 'ab'.repeat(32)) }) : r)),
    failure: 'receipt_link',
    batch: 1,
    reason: /the first receipt must have 64 zeros/,
  });
  // 8. After the checkpoint: changed without re-signing.
  cases.push({
    name: 'batch 110 changed without re-signing',
    chain: edited(110, { premiums: 1 }),
    failure: 'receipt_signature',
    batch: 110,
    reason: /^batch 110: the signature does not verify/,
  });

  for (const c of cases) {
    // The served checkpoint is signed over the chain as served, as a server holding the key would.
    const current = c.chain.length === 120 ? checkpointAt(c.chain, 120) : checkpointAt(honest, 120);
    const verdict = await verifyConsistency(saved, current, served(c.chain).range, jwks);
    t.match(verdict, { ok: false, failure: c.failure, batch: c.batch, reason: c.reason }, c.name);
  }
  const v = await verifyConsistency(saved, checkpointAt(rewritten, 120), served(rewritten).range, jwks);
  t.match(v, { expected: saved.hash, served: receiptHash(rewritten[95]!) }, 'the rewrite names both hashes of batch 96');
});

t.test("{ from: 'checkpoint' } reads from the saved checkpoint's batch, and still catches every change from there on", async (t) => {
  const head = checkpointAt(honest, 120);
  const fromCheckpoint = { from: 'checkpoint' } as const;
  const walk = served(honest);
  t.same(
    await verifyConsistency(saved, head, walk.range, jwks, fromCheckpoint),
    { ok: true, failure: null, batch: null, expected: null, served: null, reason: null, receipts: 25 },
    'batches 96 to 120',
  );
  t.same(walk.reads, [[96, 120]], 'one read, from the saved checkpoint');
  const still = served(honest);
  t.match(await verifyConsistency(saved, saved, still.range, jwks, fromCheckpoint), { ok: true, receipts: 1 });
  t.same(still.reads, [[96, 96]], 'nothing new: the saved batch alone');
  const genesis = served(honest);
  t.match(await verifyConsistency(saved, head, genesis.range, jwks, { from: 'genesis' }), { ok: true, receipts: 120 });
  t.same(genesis.reads, [[1, 120]], "'genesis' is the default, from batch 1");

  const edited = (batch: number, change: Partial<ReceiptFields>) => honest.map((r) => (r.batch === batch ? { ...r, ...change } : r));
  const resigned = (batch: number, change: Partial<ReceiptFields>) =>
    honest.map((r) => (r.batch === batch ? signed({ ...unsignedOf(batch, r.prev), ...change }) : r));
  const cases: [string, ReceiptFields[], ConsistencyFailure, number][] = [
    ["the saved checkpoint's batch changed without re-signing", edited(96, { refunds: 0 }), 'receipt_signature', 96],
    ["the saved checkpoint's batch changed and re-signed", resigned(96, { refunds: 0 }), 'saved_checkpoint_mismatch', 96],
    ['batch 76 changed and the chain re-signed up to the head', rechain(edited(76, { refunds: 0 }), 76), 'saved_checkpoint_mismatch', 96],
    ['batch 97 changed and re-signed', resigned(97, { refunds: 0 }), 'receipt_link', 98],
    ['batch 110 changed without re-signing', edited(110, { premiums: 1 }), 'receipt_signature', 110],
    ['batch 100 deleted', honest.filter((r) => r.batch !== 100), 'receipts_missing', 96],
  ];
  for (const [name, chain, failure, batch] of cases) {
    const current = chain.length === 120 ? checkpointAt(chain, 120) : head;
    t.match(await verifyConsistency(saved, current, served(chain).range, jwks, fromCheckpoint), { ok: false, failure, batch }, name);
  }

  // The trade: below the saved checkpoint nothing is read, so a change there is for a walk from batch 1 to catch.
  const below = edited(76, { refunds: 0 });
  t.match(await verifyConsistency(saved, head, served(below).range, jwks, fromCheckpoint), { ok: true, receipts: 25 }, 'not read');
  t.match(
    await verifyConsistency(saved, head, served(below).range, jwks),
    { ok: false, failure: 'receipt_signature', batch: 76 },
    'by default',
  );
});

t.test('the cost of a walk: the whole chain, 1000 receipts a read (10 000 receipts), or from the checkpoint', async (t) => {
  const chain = chainOf(10_000);
  const { range, reads } = served(chain);
  const started = process.hrtime.bigint();
  const verdict = await verifyConsistency(checkpointAt(chain, 9_000), checkpointAt(chain, 10_000), range, jwks);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  t.match(verdict, { ok: true, receipts: 10_000 });
  t.equal(reads.length, 10_000 / CONSISTENCY_MAX_RECEIPTS, 'ten reads');
  t.comment(`verifyConsistency over 10000 receipts (checkpoint at 9000): ${reads.length} reads, ${ms.toFixed(0)} ms`);

  const short = served(chain);
  const shortStarted = process.hrtime.bigint();
  const shortVerdict = await verifyConsistency(checkpointAt(chain, 9_000), checkpointAt(chain, 10_000), short.range, jwks, {
    from: 'checkpoint',
  });
  const shortMs = Number(process.hrtime.bigint() - shortStarted) / 1e6;
  t.match(shortVerdict, { ok: true, receipts: 1_001 });
  t.same(short.reads, [
    [9_000, 9_999],
    [10_000, 10_000],
  ]);
  t.comment(
    `the same with { from: 'checkpoint' }: ${short.reads.length} reads, ${shortVerdict.receipts} receipts, ${shortMs.toFixed(0)} ms`,
  );
});
