/**
 * Verifiable refunds end to end, with real processes (`svcctl serve control` and `serve
 * gateway` from the built CLI) and a test upstream that answers 200, 500 or resets. Calls go
 * through the gateway; before settlement a proof is 409 `svc_not_settled`, an unknown call
 * 404 `svc_not_found`. After `settler run-once`, a failed call's refund is verified from the
 * indexer's public reads three ways:
 *
 * 1. by an independent implementation written in this file with plain node:crypto (its own
 *    canonical JSON, leaf hash, RFC 9162 §2.1.3.2 path walk, Ed25519 check and `prev` chain);
 * 2. by the production verifier (`protocol/receipts-verify.ts`);
 * 3. by svc-monitor-sdk's `client.verifyRefund`, with the published and with a pinned JWKS.
 *
 * Then `svcctl receipts verify` (control-found and `--indexer` + `--jwks`), a key rotation
 * with `svcctl receipts rotate-key`, more settlement, and the chain still verifying across
 * both keys, while a JWKS pinned before the rotation names the first batch of the new key.
 */
import t from 'tap';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcClient, SvcError } from 'svc-monitor-sdk';
import { verifyCallProof } from '../../protocol/receipts-verify';
import { SDK_UA } from '../fixtures/public';
import { GENEROUS_LIMITS, assertProblem, drained, request, startStack, waitFor, type HttpResult } from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';

// ---------------------------------------------------------------------------------------
// The independent verifier: nothing from the repository, only node:crypto.

type Json = null | string | number | Json[] | { [k: string]: Json };
/** RFC 8785 for the values receipts use (strings, integers, null, objects): sorted names, no space. */
function jcs(v: Json): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${jcs(v[k]!)}`)
    .join(',')}}`;
}
const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** RFC 9162 §2.1.3.2, as the RFC words it. */
function rootFromPath(leafIndex: number, treeSize: number, leafHash: Buffer, path: Buffer[]): Buffer | null {
  if (leafIndex >= treeSize) return null;
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = leafHash;
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(Buffer.of(1), p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = sha256(Buffer.of(1), r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

function independentlyVerify(proof: any, jwks: { keys: any[] }): string[] {
  const problems: string[] = [];
  const leafHash = sha256(Buffer.of(0), Buffer.from(jcs(proof.leaf), 'utf8'));
  const root = rootFromPath(
    proof.leaf_index,
    proof.receipt.tree_size,
    leafHash,
    proof.audit_path.map((h: string) => Buffer.from(h, 'hex')),
  );
  if (root === null || root.toString('hex') !== proof.receipt.root) problems.push('inclusion');
  if (proof.tree_size !== proof.receipt.tree_size || proof.leaf.batch !== proof.receipt.batch) problems.push('batch');
  const { sig, ...unsigned } = proof.receipt;
  const jwk = jwks.keys.find((k) => k.kid === proof.receipt.kid);
  if (jwk === undefined) problems.push('kid');
  else {
    const key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
    if (!verify(null, Buffer.from(jcs(unsigned), 'utf8'), key, Buffer.from(sig, 'base64url'))) problems.push('signature');
  }
  return problems;
}

// ---------------------------------------------------------------------------------------

const get = (base: string, path: string, headers: Record<string, string> = {}): Promise<HttpResult> =>
  request(base, path, { method: 'GET', headers });

t.test('a failed call’s refund is proven from public reads alone', async (t) => {
  const stack = await startStack(t, { controlEnv: { ...GENEROUS_LIMITS, SVC_CACHE_STATS_TTL_S: '1' } });
  const indexer = stack.control.urls.indexer!;
  const up = await startUpstream(t);
  up.on('/base/ok', ok({ body: { fine: true } }));
  up.on('/base/fail', ok({ status: 500, body: { error: 'boom' } }));
  up.on('/base/reset', { kind: 'reset-before-headers' });
  const version = await stack.addEndpoint({
    id: 'plain',
    upstream: `${up.url}/base`,
    price: 2000,
    premium: 150,
    sla_ms: 5_000,
    timeout_ms: 3_000,
  });
  const a = await stack.issueKey({ name: 'agent a' });
  const b = await stack.issueKey({ name: 'agent b' });
  await stack.applied(Math.max(version, b.version));
  t.equal((await stack.cli(['settler', 'pause'])).code, 0);
  t.equal((await stack.cli(['pool', 'fund', '1.0'])).code, 0);

  const call = async (path: string, key: string | null) => {
    const res = await request(stack.gateway, `/v1/plain/${path}`, {
      body: '{}',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    });
    return { id: String(res.headers['x-svc-call-id']), outcome: String(res.headers['x-svc-outcome']) };
  };
  const calls: { id: string; outcome: string }[] = [];
  for (const [path, key] of [
    ['ok', a.key],
    ['fail', a.key],
    ['ok', b.key],
    ['reset', b.key],
    ['fail', null],
    ['ok', a.key],
    ['fail', b.key],
  ] as const) {
    calls.push(await call(path, key));
  }
  const failed = calls[1]!;
  t.equal(failed.outcome, 'server_error');
  await drained(stack.gateway);

  assertProblem(t, await get(indexer, `/api/calls/${failed.id}/proof`), 409, 'svc_not_settled', 'recorded, not settled');
  assertProblem(t, await get(indexer, '/api/calls/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/proof'), 404, 'svc_not_found', 'never recorded');
  t.same((await get(indexer, '/api/receipts')).body, { receipts: [], next_after: null }, 'no receipts before settlement');
  const sdk = new SvcClient({ indexerUrl: indexer });
  const early = await sdk.verifyRefund(failed.id).catch((err: unknown) => err);
  t.ok(early instanceof SvcError && early.code === 'svc_not_settled', 'the SDK rejects with svc_not_settled before settlement');

  const run = await stack.cli(['settler', 'run-once', '--json']);
  t.equal(run.code, 0, run.stderr);
  t.equal(run.json().calls, calls.length);

  const proofRes = await get(indexer, `/api/calls/${failed.id}/proof`);
  t.equal(proofRes.status, 200, proofRes.text);
  t.match(proofRes.headers['cache-control'], /^public, max-age=\d+$/, 'cached like the other indexer reads');
  t.type(proofRes.headers.etag, 'string');
  const proof = proofRes.body;
  /** What every verifier must conclude from the failed call's proof. */
  const verdict = { ok: true, refund: 2150, premium: 0, outcome: 'server_error', batch: proof.leaf.batch, reasons: [] };
  const jwks = (await get(indexer, '/api/receipts/keys')).body;
  t.equal(jwks.keys.length, 1);
  t.same(Object.keys(jwks.keys[0]).sort(), ['crv', 'kid', 'kty', 'use', 'x']);
  t.match(jwks.keys[0], { kty: 'OKP', crv: 'Ed25519', use: 'sig' });

  t.same(Object.keys(proof).sort(), ['audit_path', 'leaf', 'leaf_index', 'receipt', 'tree_size']);
  t.same(
    Object.keys(proof.leaf).sort(),
    ['batch', 'call_id', 'clamp', 'outcome', 'premium', 'provider', 'refund'],
    'a leaf names no caller',
  );
  t.match(proof.leaf, { call_id: failed.id, outcome: 'server_error', premium: 0, refund: 2150, clamp: null });
  const providers = (await get(stack.control.urls.api!, '/api/v1/providers', { 'user-agent': SDK_UA })).body;
  t.same(
    providers.providers.map((p: { id: string }) => p.id),
    [proof.leaf.provider],
    'the provider id is the one /api/v1/providers publishes',
  );
  t.same(Object.keys(proof.receipt).sort(), ['batch', 'kid', 'premiums', 'prev', 'refunds', 'root', 'settled_at', 'sig', 'tree_size', 'v']);
  t.match(proof.receipt, { v: 1, batch: proof.leaf.batch, tree_size: calls.length, prev: '0'.repeat(64) });
  t.equal(proof.receipt.kid, jwks.keys[0].kid);

  t.test('1. an independent implementation (plain node:crypto) accepts it', async (t) => {
    t.same(independentlyVerify(proof, jwks), []);
    t.same(independentlyVerify({ ...proof, leaf: { ...proof.leaf, refund: 2151 } }, jwks), ['inclusion'], 'and rejects a changed refund');
    t.same(independentlyVerify({ ...proof, receipt: { ...proof.receipt, refunds: 1 } }, jwks), ['signature'], 'and a changed receipt');
    // Every call of the batch proves into the same signed root.
    for (const c of calls) {
      const p = (await get(indexer, `/api/calls/${c.id}/proof`)).body;
      t.same(independentlyVerify(p, jwks), [], `${c.outcome} call ${c.id}`);
      t.equal(p.receipt.root, proof.receipt.root);
    }
  });

  t.test("docs/receipts.md's ten-line check accepts it", async (t) => {
    const guide = readFileSync(join(__dirname, '..', '..', 'docs', 'receipts.md'), 'utf8');
    const at = guide.indexOf('# Check your refund yourself\n');
    t.ok(at >= 0, 'docs/receipts.md opens with "# Check your refund yourself"');
    const section = guide.slice(at);
    const code = /```js\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    t.equal(code.trimEnd().split('\n').length, 10, 'ten lines');
    const file = join(stack.dataDir, '..', 'check.mjs');
    writeFileSync(file, code);
    const out = execFileSync(process.execPath, [file, indexer, failed.id], { encoding: 'utf8' });
    t.equal(out.trim(), `verified: server_error, refund 2150 in batch ${proof.leaf.batch}`);
  });

  t.test('2. the production verifier accepts it', async (t) => {
    t.same(verifyCallProof(proof, jwks, failed.id), verdict);
    t.equal(verifyCallProof(proof, jwks, calls[0]!.id).ok, false, 'not as the proof of another call');
  });

  t.test('3. svc-monitor-sdk verifyRefund accepts it, with the published and with a pinned JWKS', async (t) => {
    t.same(await sdk.verifyRefund(failed.id), verdict);
    t.same((await sdk.verifyRefund(calls[0]!.id, { jwks })).outcome, 'ok');
    const stranger = {
      keys: [{ ...jwks.keys[0], x: 'Xk5pHk6ioGJPiRWlHFhq1EwG1T7DkAZ7JE2DVNAIqd0', kid: 'Pp8F5K2Vn7CgAQfR7t3K1fGyq2kTbMlOgQX0T3p4Wf8' }],
    };
    const pinned = await sdk.verifyRefund(failed.id, { jwks: stranger });
    t.equal(pinned.ok, false, 'a pinned JWKS without the signing key fails');
    t.match(pinned.reasons.join(' '), /not in the JWKS/);
    const unknown = await sdk.verifyRefund('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b').catch((err: unknown) => err);
    t.ok(unknown instanceof SvcError && unknown.code === 'svc_not_found');
  });

  // The chain and its pages.
  const page = (await get(indexer, '/api/receipts?after=0&limit=1000')).body;
  t.equal(page.receipts.length, 1);
  t.equal(page.next_after, null);
  t.same((await get(indexer, `/api/receipts/${proof.receipt.batch}`)).body, proof.receipt);
  assertProblem(t, await get(indexer, '/api/receipts/99'), 404, 'svc_not_found');
  assertProblem(t, await get(indexer, '/api/receipts/abc'), 400, 'svc_bad_request');
  assertProblem(t, await get(indexer, '/api/receipts?limit=1001'), 400, 'svc_bad_request');

  const verified = await stack.cli(['receipts', 'verify', '--json']);
  t.equal(verified.code, 0, verified.stderr);
  t.match(verified.json(), {
    ok: true,
    receipts: 1,
    keys: 1,
    jwks: 'published',
    refunds: run.json().refunds,
    premiums: run.json().premiums,
    first_bad_batch: null,
  });
  const firstKey = join(stack.dataDir, '..', 'first-key.jwks.json');
  writeFileSync(firstKey, JSON.stringify(jwks));

  // Rotate, settle more: one chain over both keys.
  const rotated = await stack.cli(['receipts', 'rotate-key', '--json']);
  t.equal(rotated.code, 0, rotated.stderr);
  t.equal(rotated.json().previous_kid, jwks.keys[0].kid);
  t.same(rotated.json().published, [rotated.json().kid, jwks.keys[0].kid]);
  for (const [path, key] of [
    ['fail', a.key],
    ['ok', b.key],
  ] as const)
    calls.push(await call(path, key));
  await drained(stack.gateway);
  t.equal((await stack.cli(['settler', 'run-once'])).code, 0);
  const keysNow = (await get(indexer, '/api/receipts/keys')).body;
  t.same(
    keysNow.keys.map((k: { kid: string }) => k.kid),
    [rotated.json().kid, jwks.keys[0].kid],
    'old keys stay published',
  );
  const all = (await get(indexer, '/api/receipts?limit=1')).body;
  t.equal(all.next_after, 1, 'pages continue with next_after');
  const receipts = [...all.receipts, ...(await get(indexer, '/api/receipts?after=1')).body.receipts];
  t.same(
    receipts.map((r: { batch: number; kid: string }) => [r.batch, r.kid]),
    [
      [1, jwks.keys[0].kid],
      [2, rotated.json().kid],
    ],
  );
  t.equal(
    receipts[1].prev,
    sha256(Buffer.from(jcs(receipts[0]), 'utf8')).toString('hex'),
    'prev is the hash of the previous receipt, sig included',
  );
  t.same(independentlyVerify((await get(indexer, `/api/calls/${calls[calls.length - 2]!.id}/proof`)).body, keysNow), []);
  t.same((await sdk.verifyRefund(failed.id)).ok, true, 'a receipt signed by the old key still verifies');

  // `receipts verify` checks the batches /api/stats reports (cached up to cache.statsTtlS).
  await waitFor(async () => (await get(indexer, '/api/stats')).body.settled_batches === 2, 'the indexer to report both batches');
  const again = await stack.cli(['receipts', 'verify', '--indexer', indexer]);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^Receipts OK: 2 receipts \(batches 1–2\)/);
  const pinnedOld = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--jwks', firstKey]);
  t.equal(pinnedOld.code, 1, 'a JWKS pinned before the rotation');
  t.match(pinnedOld.stderr, /receipts verify failed: batch 2: signed by key \S+, which is not in the JWKS/);

  // One call's refund: `receipts verify --call ID`.
  const one = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--call', failed.id]);
  t.equal(one.code, 0, one.stderr);
  t.match(
    one.stdout,
    new RegExp(
      `^Call ${failed.id} verified: outcome \\w+, refund [\\d.]+, premium 0, in settlement batch 1, whose receipt is signed by key ${jwks.keys[0].kid}\\.$`,
      'm',
    ),
  );
  const oneJson = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--call', failed.id, '--json']);
  t.match(oneJson.json(), { ok: true, call_id: failed.id, batch: 1, kid: jwks.keys[0].kid, reasons: [] });
  const shouted = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--call', failed.id.toUpperCase(), '--json']);
  t.match(shouted.json(), { ok: true, call_id: failed.id, batch: 1, reasons: [] }, 'the id in capitals is the same call');
  const pinnedCall = await stack.cli([
    'receipts',
    'verify',
    '--indexer',
    indexer,
    '--jwks',
    firstKey,
    '--call',
    calls[calls.length - 2]!.id,
  ]);
  t.equal(pinnedCall.code, 1, 'a call of batch 2 against the JWKS pinned before the rotation');
  t.match(pinnedCall.stderr, /receipts verify --call failed: .*not in the JWKS/);
  const unknown = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--call', '01900000-0000-7000-8000-000000000000']);
  t.equal(unknown.code, 1, 'a call never recorded');
  t.match(unknown.stderr, /indexer answered 404 .*svc_not_found/);
  const notId = await stack.cli(['receipts', 'verify', '--indexer', indexer, '--call', 'nope']);
  t.equal(notId.code, 2, 'not a call id: a usage error');
  t.match(notId.stderr, /--call nope: not a call id/);
  const ledger = await stack.cli(['ledger', 'verify']);
  t.equal(ledger.code, 0, ledger.stderr);
});
