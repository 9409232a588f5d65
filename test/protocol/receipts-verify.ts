/**
 * The receipts verifier (protocol/receipts-verify.ts) on chains and proofs built here with
 * node:crypto: a whole chain verifies; each kind of damage is named at its batch (a gap, a
 * repeat, a broken `prev`, an edited field, an unknown or mis-named key); totals must add up;
 * a proof verifies only for its own call, leaf, path, tree and signed receipt.
 */
import t from 'tap';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { inclusionPath, rootOf, toHex } from '../../protocol/merkle';
import {
  ChainVerifier,
  GENESIS_PREV,
  ReceiptKeyring,
  jwkThumbprint,
  leafHashOf,
  receiptHash,
  receiptSigningBytes,
  verifyCallProof,
  type CallProofFields,
  type ReceiptFields,
  type ReceiptJwkFields,
  type ReceiptLeafFields,
} from '../../protocol/receipts-verify';

interface TestKey {
  jwk: ReceiptJwkFields;
  priv: KeyObject;
}
function newKey(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x!;
  return { priv: privateKey, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid: jwkThumbprint(x), use: 'sig' } };
}

function leavesOf(batch: number, n: number): ReceiptLeafFields[] {
  return Array.from({ length: n }, (_, i) => ({
    batch,
    call_id: `call-${batch}-${i}`,
    provider: 'prv_test',
    outcome: i % 3 === 0 ? 'server_error' : 'ok',
    premium: i % 3 === 0 ? 0 : 150,
    refund: i % 3 === 0 ? 2150 : 0,
    clamp: null,
  }));
}

function signReceipt(key: TestKey, fields: Omit<ReceiptFields, 'sig' | 'kid'> & { kid?: string }): ReceiptFields {
  const unsigned = { ...fields, kid: fields.kid ?? key.jwk.kid };
  return { ...unsigned, sig: sign(null, receiptSigningBytes(unsigned), key.priv).toString('base64url') };
}

function chainOf(key: TestKey, sizes: number[]): { receipts: ReceiptFields[]; leaves: ReceiptLeafFields[][] } {
  const receipts: ReceiptFields[] = [];
  const leaves: ReceiptLeafFields[][] = [];
  let prev = GENESIS_PREV;
  sizes.forEach((n, i) => {
    const batch = i + 1;
    const l = leavesOf(batch, n);
    const r = signReceipt(key, {
      v: 1,
      batch,
      prev,
      root: toHex(rootOf(l.map(leafHashOf))),
      tree_size: n,
      refunds: l.reduce((s, x) => s + x.refund, 0),
      premiums: l.reduce((s, x) => s + x.premium, 0),
      settled_at: new Date(Date.UTC(2030, 0, 1, 0, 0, batch)).toISOString(),
    });
    receipts.push(r);
    leaves.push(l);
    prev = receiptHash(r);
  });
  return { receipts, leaves };
}

function walk(keyring: ReceiptKeyring, receipts: ReceiptFields[]) {
  const chain = new ChainVerifier(keyring);
  for (const r of receipts) {
    const problem = chain.push(r);
    if (problem !== null) return { chain, problem };
  }
  return { chain, problem: null };
}

const key = newKey();
const jwks = { keys: [key.jwk] };
const { receipts, leaves } = chainOf(key, [5, 1, 8, 3]);

t.test('a whole chain verifies and sums up', async (t) => {
  const { chain, problem } = walk(new ReceiptKeyring(jwks), receipts);
  t.equal(problem, null);
  t.equal(chain.count, 4);
  t.equal(
    chain.refunds,
    receipts.reduce((s, r) => s + r.refunds, 0),
  );
  t.equal(chain.checkTotals({ batches: 4, refunds: chain.refunds, premiums: chain.premiums }), null);
  t.match(chain.checkTotals({ batches: 4, refunds: chain.refunds + 1, premiums: chain.premiums }), {
    batch: null,
    reason: /refunds sum to/,
  });
  t.match(chain.checkTotals({ batches: 4, refunds: chain.refunds, premiums: chain.premiums - 1 }), {
    batch: null,
    reason: /premiums sum to/,
  });
  t.match(chain.checkTotals({ batches: 5, refunds: chain.refunds, premiums: chain.premiums }), {
    batch: 5,
    reason: /^batch 5: no receipt/,
  });
});

t.test('damage is named at its batch', async (t) => {
  const keyring = new ReceiptKeyring(jwks);
  const at = (list: ReceiptFields[]) => walk(keyring, list).problem;
  t.match(
    at([receipts[0]!, receipts[2]!, receipts[3]!]),
    { batch: 2, reason: /^batch 2: no receipt \(the chain goes from batch 1 to 3\)/ },
    'a deleted receipt',
  );
  t.match(at(receipts.slice(1)), { batch: 1, reason: /^batch 1: no receipt \(the chain starts at batch 2\)/ }, 'the first deleted');
  t.match(at([receipts[0]!, receipts[1]!, receipts[1]!]), { batch: 2, reason: /^batch 2: a second receipt/ }, 'a repeat');
  const edited = { ...receipts[2]!, root: toHex(rootOf(leavesOf(3, 7).map(leafHashOf))) };
  t.match(
    at([receipts[0]!, receipts[1]!, edited, receipts[3]!]),
    { batch: 3, reason: /^batch 3: the signature does not verify/ },
    'an edited root',
  );
  t.match(at([receipts[0]!, receipts[1]!, { ...receipts[2]!, refunds: 1 }]), { batch: 3, reason: /signature/ }, 'edited refunds');
  const stranger = newKey();
  const resigned = signReceipt(stranger, { ...receipts[2]!, root: edited.root, kid: stranger.jwk.kid });
  t.match(
    at([receipts[0]!, receipts[1]!, resigned]),
    { batch: 3, reason: /^batch 3: signed by key .*, which is not in the JWKS/ },
    'signed by an unknown key',
  );
  const sameKid = signReceipt(stranger, { ...receipts[2]!, kid: key.jwk.kid });
  t.match(
    at([receipts[0]!, receipts[1]!, sameKid]),
    { batch: 3, reason: /does not verify under key/ },
    'an unknown key claiming a published kid',
  );
  // Re-signing a changed receipt with the right key still breaks the next link.
  const honestKeyEdit = signReceipt(key, { ...receipts[1]!, refunds: receipts[1]!.refunds + 5 });
  t.match(
    at([receipts[0]!, honestKeyEdit, receipts[2]!]),
    { batch: 3, reason: /^batch 3: prev does not link/ },
    'a rewritten past breaks the chain after it',
  );
  t.match(at([{ ...receipts[0]!, prev: receipts[1]!.prev }]), { batch: 1, reason: /64 zeros/ }, 'the first receipt links to nothing');
  t.match(
    at([{ ...receipts[0]!, v: 2 } as unknown as ReceiptFields]),
    { batch: 1, reason: /malformed receipt \(v is 2/ },
    'another version',
  );
  t.match(
    at([{ ...receipts[0]!, extra: 1 } as unknown as ReceiptFields]),
    { batch: 1, reason: /unknown members: extra/ },
    'an extra member',
  );
});

t.test('the keyring takes only Ed25519 keys named by their thumbprint', async (t) => {
  const other = newKey();
  const ring = new ReceiptKeyring({
    keys: [key.jwk, { ...other.jwk, kid: 'mine' }, { ...other.jwk, crv: 'X25519' }, { kty: 'RSA', kid: 'r' }],
  });
  t.equal(ring.size, 1);
  t.ok(ring.has(key.jwk.kid));
  t.match(ring.problems, [
    /key mine: the kid is not the key's RFC 7638 thumbprint/,
    /not an Ed25519 OKP key/,
    /key r: not an Ed25519 OKP key/,
  ]);
  t.equal(new ReceiptKeyring({}).size, 0);
  // RFC 8037 appendix A.3: the thumbprint of the RFC's example key.
  t.equal(jwkThumbprint('11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo'), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
});

function proofFor(batch: number, index: number): CallProofFields {
  const l = leaves[batch - 1]!;
  const { path } = inclusionPath(l.map(leafHashOf), index);
  return { leaf: l[index]!, leaf_index: index, tree_size: l.length, audit_path: path.map(toHex), receipt: receipts[batch - 1]! };
}

t.test('a proof verifies for its call, and only for it', async (t) => {
  for (const [batch, index] of [
    [1, 0],
    [1, 4],
    [2, 0],
    [3, 7],
    [4, 2],
  ] as const) {
    const v = verifyCallProof(proofFor(batch, index), jwks, `call-${batch}-${index}`);
    t.same(
      v,
      {
        ok: true,
        refund: index % 3 === 0 ? 2150 : 0,
        premium: index % 3 === 0 ? 0 : 150,
        outcome: index % 3 === 0 ? 'server_error' : 'ok',
        batch,
        reasons: [],
      },
      `call ${batch}/${index}`,
    );
  }
  const p = proofFor(3, 3);
  const fails = (proof: CallProofFields, why: RegExp, callId?: string, keys: object = jwks) => {
    const v = verifyCallProof(proof, keys as typeof jwks, callId);
    t.equal(v.ok, false, String(why));
    t.match(v.reasons.join(' | '), why);
  };
  fails(p, /not call-3-4/, 'call-3-4');
  fails({ ...p, leaf: { ...p.leaf, refund: p.leaf.refund + 1 } }, /do not lead to the receipt's root/);
  fails({ ...p, leaf_index: 4 }, /do not lead to the receipt's root/);
  fails({ ...p, audit_path: p.audit_path.slice(1) }, /does not fit leaf 3 of a tree of 8|do not lead/);
  fails({ ...p, audit_path: [...p.audit_path.slice(0, 2), 'zz'] }, /not a list of 64-hex-digit hashes/);
  fails({ ...p, tree_size: 9 }, /tree_size 9 is not the receipt's 8/);
  fails({ ...p, receipt: receipts[1]! }, /batch 3 but the receipt is for batch 2/);
  fails({ ...p, receipt: { ...p.receipt, refunds: 0 } }, /signature does not verify/);
  fails(p, /not in the JWKS/, undefined, { keys: [newKey().jwk] });
  fails({ ...p, leaf: { ...p.leaf, clamp: 'maybe' as never } }, /clamp is not null/);
});

t.test('a leaf may carry any clamp: pool_depleted, cap_clamped, batch_capped, call_capped', async (t) => {
  const clamps = [null, 'pool_depleted', 'cap_clamped', 'batch_capped', 'call_capped'] as const;
  const l: ReceiptLeafFields[] = clamps.map((clamp, i) => ({
    batch: 1,
    call_id: `clamped-${i}`,
    provider: 'prv_test',
    outcome: 'server_error',
    premium: 0,
    refund: clamp === null ? 2150 : 700,
    clamp,
  }));
  const receipt = signReceipt(key, {
    v: 1,
    batch: 1,
    prev: GENESIS_PREV,
    root: toHex(rootOf(l.map(leafHashOf))),
    tree_size: l.length,
    refunds: l.reduce((s, x) => s + x.refund, 0),
    premiums: 0,
    settled_at: new Date(Date.UTC(2030, 0, 1)).toISOString(),
  });
  l.forEach((leaf, i) => {
    const proof = { leaf, leaf_index: i, tree_size: l.length, audit_path: inclusionPath(l.map(leafHashOf), i).path.map(toHex), receipt };
    t.match(verifyCallProof(proof, jwks, leaf.call_id), { ok: true, refund: leaf.refund, reasons: [] }, `clamp ${leaf.clamp}`);
  });
});
