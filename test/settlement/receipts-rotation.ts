/**
 * Receipt signing keys at the store level (control/store/receipts.ts): rotation (new receipts
 * carry the new kid, old ones keep verifying, one chain across it, a failed publication leaves
 * the old key signing, a rotation another one overtook is refused by code) and the key file (0600, reused across opens, a bad one stops the store
 * without echoing it). Each case runs on both stores (`forEachStore`).
 */
import t from 'tap';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import { hasCode } from '../../protocol/coded-error';
import { jwkThumbprint, verifyCallProof } from '../../protocol/receipts-verify';
import { T0, all, chainProblem, records, seed, settle } from '../fixtures/receipts';
import { newInstall, openInstall } from '../fixtures/store-sql';
import { forEachStore } from '../fixtures/stores';

t.test('rotation: new receipts carry the new kid, old ones keep verifying, the file holds only the new key', async (t) => {
  forEachStore(t, async (t, kind) => {
    const dir = t.testdir();
    const store = await openInstall(t, await newInstall(t, kind, dir));
    await seed(store);
    const recs = records(120);
    await store.outcomes.ingest(recs, T0);
    const before = await settle(store);
    const oldKid = await store.receipts.currentKid();
    const pemBefore = readFileSync(join(dir, RECEIPT_KEY_FILE), 'utf8');

    let audited = false;
    const rotation = await store.receipts.prepareRotation();
    t.equal(rotation.previous_kid, oldKid);
    await store.mutate({ actor: 'test', now: T0 }, { action: 'receipts.rotate_key', target: rotation.kid }, async (tx) => {
      audited = true;
      await tx.receipts.publishPrepared(rotation.kid, T0);
    });
    await store.receipts.activatePrepared(rotation.kid);
    t.ok(audited, 'the public key is published through the caller');
    t.not(rotation.kid, oldKid);
    t.same(
      (await store.receipts.jwks()).keys.map((k) => k.kid),
      [rotation.kid, oldKid],
      'both published, the current first',
    );
    const pemAfter = readFileSync(join(dir, RECEIPT_KEY_FILE), 'utf8');
    t.not(pemAfter, pemBefore, 'the old private key is gone from the file');
    t.equal(jwkThumbprint(createPublicKey(createPrivateKey(pemAfter)).export({ format: 'jwk' }).x!), rotation.kid);
    t.equal(statSync(join(dir, RECEIPT_KEY_FILE)).mode & 0o777, 0o600);

    const later = records(60, 1000);
    await store.outcomes.ingest(later, T0);
    const after = await settle(store);
    const receipts = await all(store);
    t.same(
      receipts.slice(0, before).map((r) => r.kid),
      Array(before).fill(oldKid),
    );
    t.same(
      receipts.slice(before).map((r) => r.kid),
      Array(after).fill(rotation.kid),
    );
    t.equal(await chainProblem(store), null, 'one chain across the rotation');
    const jwks = await store.receipts.jwks();
    for (const r of [recs[0]!, later[0]!]) {
      const found = await store.receipts.proof(r.call_id);
      t.equal(found.state === 'settled' && verifyCallProof(found.proof, jwks, r.call_id).ok, true, `proof of ${r.call_id}`);
    }

    // A publication that fails leaves the old key signing.
    const unpublished = await store.receipts.prepareRotation();
    const failed = await store
      .mutate({ actor: 'test', now: T0 }, { action: 'receipts.rotate_key', target: unpublished.kid }, () => {
        throw new Error('audit failed');
      })
      .then(
        () => null,
        (err: Error) => err.message,
      );
    t.equal(failed, 'audit failed');
    t.equal(await store.receipts.currentKid(), rotation.kid, 'still the published key');

    // Two rotations at once: the one whose prepared key the other replaced is refused by code.
    const overtaken = await store.receipts.prepareRotation();
    const latest = await store.receipts.prepareRotation();
    const refused = await Promise.resolve()
      .then(() => store.receipts.activatePrepared(overtaken.kid))
      .then(
        () => null,
        (err: unknown) => err,
      );
    t.ok(hasCode(refused, 'SVC_ERR_KEY_NOT_PREPARED'), 'the overtaken rotation is refused');
    t.match(refused, { name: 'KeyNotPreparedError', kid: overtaken.kid, message: /another rotation replaced it/ });
    t.equal(await store.receipts.currentKid(), rotation.kid, 'the published key signs on');
    t.not(latest.kid, overtaken.kid);
  });
});

t.test('the key file: 0600, reused across opens, a bad one stops the store without echoing it', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const first = await openInstall(t, at);
    const kid = await first.receipts.currentKid();
    await first.close();
    t.equal(statSync(join(at.dataDir, RECEIPT_KEY_FILE)).mode & 0o777, 0o600);
    const second = await openInstall(t, at);
    t.equal(await second.receipts.currentKid(), kid, 'the same key after a restart');
    await second.close();

    writeFileSync(join(at.dataDir, RECEIPT_KEY_FILE), 'not a key: secret-looking-bytes\n', { mode: 0o644 });
    let message = '';
    try {
      await (await openInstall(t, at)).close();
    } catch (err) {
      message = (err as Error).message;
    }
    t.match(message, /does not hold a PEM private key/);
    t.notMatch(message, /secret-looking-bytes/, 'the content is not echoed');
  });
});
