/**
 * The receipt checks of `ledger verify` (control/store/receipts-audit.ts) at the store level, on
 * both stores: a settled install is edited behind the store's back, as someone with write
 * access to its database could, and `ledger.verify()` names the damaged batch while the damaged
 * calls' proofs stop verifying:
 *
 * | edit | ledger verify |
 * |---|---|
 * | two calls' outcomes and amounts swapped, batch and ledger consistent | batch N's root is not its calls' root |
 * | a receipt's premiums raised | batch N: its receipt states premiums … |
 * | a receipt deleted | batch N has no receipt (and its calls have none to prove against) |
 * | a receipt's root edited | batch N: signature |
 * | a receipt re-signed with an unknown key | batch N: key not published |
 * | …and that key published too | batch N+1: prev does not link |
 * | a published key that is not a key | receipt keys: … |
 *
 * And the store-level half of issue #24 (test/settlement/receipts-halt.ts runs it through control
 * and svcctl): the newest batch rewritten consistently and its receipt deleted is not re-signed
 * on open; the settler halts on it until `reissue` signs it, with another root than before.
 */
import t, { type Test } from 'tap';
import { generateKeyPairSync, sign } from 'node:crypto';
import { Settler, SettlerHaltedError } from '../../control/settler/settler';
import type { Store } from '../../control/store';
import { silentLogger } from '../../runtime/log';
import type { Outcome } from '../../protocol/outcome';
import {
  jwkThumbprint,
  receiptSigningBytes,
  verifyCallProof,
  type ReceiptFields,
  type ReceiptJwksFields,
} from '../../protocol/receipts-verify';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { keyLedger } from '../fixtures/ledger';
import { newInstall, openInstall, rawQuery, type Install } from '../fixtures/store-sql';
import { forEachStore, type StoreKind } from '../fixtures/stores';

const T0 = Date.UTC(2030, 0, 1, 12);
const HOUR_MS = 3_600_000;
const KINDS: Outcome[] = ['ok', 'server_error', 'ok', 'network_error', 'client_error'];
const TARGET = 3;

interface Call {
  call_id: string;
  key_id: string;
  outcome: Outcome;
  premium: number;
  refund: number;
  refund_owed: number;
}

const settlerOf = (store: Store): Promise<Settler> =>
  Settler.open({ store, log: silentLogger, now: () => T0 + 60_000, cadenceMs: HOUR_MS, batchCap: 20 });

/** An install settled in 6 batches of 20 calls over two endpoints, and the store open on it. */
async function settled(t: Test, kind: StoreKind): Promise<{ at: Install; store: Store; published: ReceiptJwksFields }> {
  const at = await newInstall(t, kind);
  const store = await openInstall(t, at);
  await saveEndpoint(store, 'a', { price: 2000, premium: 150 });
  await saveEndpoint(store, 'b', { price: 1000, premium: 100 });
  await store.mutate({ actor: 'test', now: T0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000_000, T0, 'test', null));
  const records = Array.from({ length: 120 }, (_, i) =>
    outcome({
      endpoint_id: i % 2 ? 'a' : 'b',
      outcome: KINDS[i % KINDS.length]!,
      key_id: `key_${Math.floor(i / 12) % 3}`,
      started: T0 + i,
    }),
  );
  await store.outcomes.ingest(records, T0);
  t.equal((await (await settlerOf(store)).runOnce()).batches.length, 6, 'six batches');
  t.equal((await store.ledger.verify()).violation, null, 'untouched: ledger verify passes');
  return { at, store, published: await store.receipts.jwks() };
}

/** Batch `batch`'s calls in settlement order. */
async function callsOf(at: Install, batch: number): Promise<Call[]> {
  const rows = await rawQuery(
    at,
    `SELECT call_id, key_id, outcome, premium, refund, refund_owed FROM outcomes WHERE settled_batch = ? ORDER BY received_at, call_id`,
    [batch],
  );
  return rows.map(
    ([call_id, key_id, outcome, premium, refund, refund_owed]) => ({ call_id, key_id, outcome, premium, refund, refund_owed }) as Call,
  );
}

async function proves(store: Store, jwks: ReceiptJwksFields, callId: string): Promise<boolean> {
  const found = await store.receipts.proof(callId);
  return found.state === 'settled' && verifyCallProof(found.proof, jwks, callId).ok;
}

t.test('tampering with a settled database is caught by ledger verify, naming the batch', async (t) => {
  forEachStore(t, async (t, kind) => {
    const stranger = generateKeyPairSync('ed25519');
    const x = stranger.publicKey.export({ format: 'jwk' }).x!;
    const kid = jwkThumbprint(x);
    const otherRoot = 'ab'.repeat(32);
    const resign = async (at: Install) => {
      const [row] = await rawQuery(
        at,
        `SELECT v, batch, prev, root, tree_size, refunds, premiums, settled_at, kid, sig FROM receipts WHERE batch = ?`,
        [TARGET],
      );
      const [v, batch, prev, , tree_size, refunds, premiums, settled_at] = row!;
      const unsigned = { v, batch, prev, root: otherRoot, tree_size, refunds, premiums, settled_at, kid } as ReceiptFields;
      const sig = sign(null, receiptSigningBytes(unsigned), stranger.privateKey).toString('base64url');
      await rawQuery(at, `UPDATE receipts SET root = ?, kid = ?, sig = ? WHERE batch = ?`, [otherRoot, kid, sig, TARGET]);
    };

    const cases: { name: string; edit: (at: Install, calls: Call[]) => Promise<unknown>; violation: RegExp; proofs: boolean }[] = [
      {
        name: 'two calls rewritten, batch and ledger kept consistent: only the root shows it',
        edit: async (at, calls) => {
          const failed = calls.find((c) => c.outcome === 'server_error')!;
          const paid = calls.find((c) => c.outcome === 'ok' && c.key_id === failed.key_id)!;
          const record = `UPDATE outcome_records SET outcome = ?, status = ? WHERE call_id = ?`;
          const settled = `UPDATE settled_calls SET outcome = ?, premium = ?, refund = ?, refund_owed = ? WHERE call_id = ?`;
          await rawQuery(at, record, [paid.outcome, 200, failed.call_id]);
          await rawQuery(at, settled, [paid.outcome, paid.premium, paid.refund, paid.refund_owed, failed.call_id]);
          await rawQuery(at, record, [failed.outcome, 500, paid.call_id]);
          await rawQuery(at, settled, [failed.outcome, failed.premium, failed.refund, failed.refund_owed, paid.call_id]);
        },
        violation: /^batch 3: its receipt's root [0-9a-f]{64} is not the root of its 20 calls \([0-9a-f]{64}\)$/,
        proofs: false,
      },
      {
        name: "a receipt's premiums raised",
        edit: (at) => rawQuery(at, `UPDATE receipts SET premiums = premiums + 1 WHERE batch = ?`, [TARGET]),
        violation: /^batch 3: its receipt states premiums \d+ \(the batch has \d+\)$/,
        proofs: false,
      },
      {
        name: 'a receipt deleted',
        edit: (at) => rawQuery(at, `DELETE FROM receipts WHERE batch = ?`, [TARGET]),
        violation: /^batch 3 has no receipt$/,
        proofs: false,
      },
      {
        name: "a receipt's root edited",
        edit: (at) => rawQuery(at, `UPDATE receipts SET root = ? WHERE batch = ?`, [otherRoot, TARGET]),
        violation: /^batch 3: the signature does not verify under key /,
        proofs: false,
      },
      {
        name: 'a receipt re-signed with an unknown key',
        edit: resign,
        violation: new RegExp(`^batch 3: signed by key ${kid}, which is not in the JWKS$`),
        proofs: false,
      },
      {
        name: '…and that key published as well: the next link breaks',
        edit: async (at) => {
          await resign(at);
          await rawQuery(at, `INSERT INTO receipt_keys (kid, x, created_at) VALUES (?, ?, ?)`, [kid, x, T0]);
        },
        violation: /^batch 4: prev does not link to the chain \(it is not the hash of receipt 3\)$/,
        proofs: false,
      },
      {
        name: 'a published key that is not an Ed25519 key',
        edit: (at) => rawQuery(at, `INSERT INTO receipt_keys (kid, x, created_at) VALUES ('bogus', '!', ?)`, [T0]),
        violation: /^receipt keys: key bogus: not an Ed25519 OKP key$/,
        proofs: true,
      },
    ];

    for (const c of cases) {
      await t.test(c.name, async (t) => {
        const { at, store, published } = await settled(t, kind);
        const calls = await callsOf(at, TARGET);
        const failed = calls.find((call) => call.outcome === 'server_error')!;
        const paid = calls.find((call) => call.outcome === 'ok' && call.key_id === failed.key_id)!;
        t.ok(failed && paid, 'batch 3 has a refunded and a premium call of one key');
        await c.edit(at, calls);
        t.match((await store.ledger.verify()).violation, c.violation);
        const proved = [await proves(store, published, failed.call_id), await proves(store, published, paid.call_id)];
        t.same(
          proved,
          [c.proofs, c.proofs],
          c.proofs ? "the batch's proofs still verify" : "the batch's calls no longer prove what they did",
        );
        const other = (await callsOf(at, TARGET + 1))[0]!;
        t.ok(await proves(store, published, other.call_id), "the next batch's proofs still verify");
      });
    }
  });
});

/**
 * Turn the first refunded call of `batch` into a client error and keep every row that adds up to
 * it consistent (the batch, the refund transfer, both balances, the hourly tally); delete the
 * batch's receipt. Returns the call's id.
 */
async function rewriteBatch(at: Install, batch: number): Promise<string> {
  const [row] = await rawQuery(
    at,
    `SELECT call_id, key_id, endpoint_id, started_at, refund FROM outcomes
     WHERE settled_batch = ? AND refund > 0 AND clamp IS NULL ORDER BY received_at, call_id LIMIT 1`,
    [batch],
  );
  const [callId, keyId, endpointId, startedAt, refund] = row as [string, string, string, number, number];
  const key = keyLedger(keyId);
  await rawQuery(at, `UPDATE outcome_records SET outcome = 'client_error', status = 404 WHERE call_id = ?`, [callId]);
  await rawQuery(at, `UPDATE settled_calls SET outcome = 'client_error', refund = 0, refund_owed = 0 WHERE call_id = ?`, [callId]);
  await rawQuery(at, `UPDATE settlement_batches SET refunds = refunds - ?, refunds_owed = refunds_owed - ? WHERE id = ?`, [
    refund,
    refund,
    batch,
  ]);
  // The refund transfer holding the key's posting: the batch's one (a posting per key), or the
  // key's own in a batch settled before that shape. Take the refund off the key's posting and
  // the pool's; the transfer goes only with its last posting.
  const [transfer] = await rawQuery(
    at,
    `SELECT t.id, p.amount, pool.amount FROM ledger_transfers t
       JOIN ledger_postings p ON p.transfer_id = t.id JOIN ledger_postings pool ON pool.transfer_id = t.id AND pool.account = 'pool'
     WHERE t.batch_id = ? AND t.kind = 'refund' AND p.account = ?`,
    [batch, key],
  );
  const [transferId, amount, pool] = (transfer as unknown[]).map(Number) as [number, number, number];
  if (pool === -Number(refund)) {
    await rawQuery(at, `DELETE FROM ledger_postings WHERE transfer_id = ?`, [transferId]);
    await rawQuery(at, `DELETE FROM ledger_transfers WHERE id = ?`, [transferId]);
  } else {
    if (amount === Number(refund))
      await rawQuery(at, `DELETE FROM ledger_postings WHERE transfer_id = ? AND account = ?`, [transferId, key]);
    else
      await rawQuery(at, `UPDATE ledger_postings SET amount = amount - ? WHERE transfer_id = ? AND account = ?`, [refund, transferId, key]);
    await rawQuery(at, `UPDATE ledger_postings SET amount = amount + ? WHERE transfer_id = ? AND account = 'pool'`, [refund, transferId]);
  }
  await rawQuery(at, `UPDATE account_balances SET balance = balance - ? WHERE account = ?`, [refund, key]);
  await rawQuery(at, `UPDATE account_balances SET balance = balance + ? WHERE account = 'pool'`, [refund]);
  await rawQuery(at, `UPDATE refund_hours SET refunds = refunds - ? WHERE endpoint_id = ? AND hour = ?`, [
    refund,
    endpointId,
    Math.floor(startedAt / HOUR_MS),
  ]);
  await rawQuery(at, `DELETE FROM receipts WHERE batch = ?`, [batch]);
  return callId;
}

t.test('a rewritten newest batch without its receipt is not re-signed on open: halted until reissued', async (t) => {
  forEachStore(t, async (t, kind) => {
    const { at, store, published } = await settled(t, kind);
    const saved = (await store.receipts.head())!;
    await store.close();
    const rewritten = await rewriteBatch(at, saved.batch);

    const reopened = await openInstall(t, at);
    t.same(await reopened.receipts.missing(), { batch: saved.batch, count: 1 }, 'the batch is missing its receipt');
    t.equal(await reopened.receipts.get(saved.batch), null, 'and the open did not sign it');
    const settler = await settlerOf(reopened);
    t.match(await settler.status(), { state: 'halted', halted: { batch: saved.batch, batches_without_receipt: 1 } });
    await t.rejects(settler.runOnce(), SettlerHaltedError);
    t.equal((await reopened.ledger.verify()).violation, `batch ${saved.batch} has no receipt`, 'every other invariant holds');
    t.same(await reopened.receipts.proof(rewritten), { state: 'unreceipted', batch: saved.batch });

    const reissued = await reopened.mutate({ actor: 'test', now: T0 }, { action: 'receipts.reissue', target: String(saved.batch) }, (tx) =>
      tx.receipts.reissue(saved.batch),
    );
    t.equal(reissued.result.kid, saved.kid, 'signed by the same key');
    t.not(reissued.result.root, saved.root, 'over the rows as they are now: another root');
    t.not(reissued.result.refunds, saved.refunds);
    t.equal(await settler.checkReceipts(), null, 'the halt is lifted');
    t.equal((await reopened.ledger.verify()).violation, null, 'ledger verify passes again');
    const found = await reopened.receipts.proof(rewritten);
    t.match(found.state === 'settled' && verifyCallProof(found.proof, published, rewritten), { ok: true, outcome: 'client_error' });
  });
});
