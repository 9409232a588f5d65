/**
 * Checkpoints, the consistency read and the receipts feed on the indexer, on both stores:
 *
 * - `/api/receipts/checkpoint`: 404 before the first batch; then the newest batch and its
 *   receipt's hash, signed over its canonical bytes by a key of the JWKS (checked with
 *   node:crypto directly and with the shared verifier), by the new key after a rotation;
 * - `/api/receipts/consistency?from=&to=`: the receipts from A to B, which `verifyConsistency`
 *   accepts from an older checkpoint to the newer one (reading from batch 1); A > B, a span over 1000, a missing or
 *   malformed bound are 400, a batch without a receipt 404;
 * - `/receipts.atom`: one entry per batch, newest first, each with its receipt's hash.
 */
import t from 'tap';
import { createPublicKey, verify } from 'node:crypto';
import { canonicalize } from '../../protocol/jcs';
import { verifyConsistency } from '../../protocol/receipts-consistency';
import { ReceiptKeyring, receiptHash, type ReceiptFields } from '../../protocol/receipts-verify';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

async function settle(control: TestControl): Promise<void> {
  const run = await control.admin('POST', '/_admin/v1/settler/run-once', {});
  if (run.status !== 200) throw new Error(`run-once answered ${run.status}: ${run.text}`);
}

forEachStore(t, (t, kind) => {
  t.test('checkpoint, consistency and the receipts feed', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_SETTLER_CADENCE_MS: '3600000', SVC_SETTLER_BATCH_CAP: '2', SVC_CACHE_STATS_TTL_S: '1', SVC_CACHE_STATUS_TTL_S: '1' },
    });
    const idx = control.urls.indexer;
    await addEndpoint(control, 'weather', { price: 2_000, premium: 100 });
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 50_000_000 })).status, 201);

    const none = await get(control, idx, '/api/receipts/checkpoint');
    t.equal(none.status, 404, 'no checkpoint before the first batch');
    t.equal(none.body.code, 'svc_not_found');

    await ingest(
      control,
      many(6, (i) => outcome({ endpoint_id: 'weather', at: NOW - 10_000 + i, outcome: i % 3 ? 'ok' : 'server_error' })),
    );
    clock.advance(1_000);
    await settle(control);
    const first = await get(control, idx, '/api/receipts/checkpoint');
    t.equal(first.status, 200, first.text);
    const receipts = (await get(control, idx, '/api/receipts?limit=1000')).body.receipts as ReceiptFields[];
    t.equal(receipts.length, 3, 'three batches of two');
    const head = receipts[receipts.length - 1]!;
    t.same(Object.keys(first.body).sort(), ['batch', 'hash', 'kid', 'kind', 'sig', 'v']);
    t.match(first.body, { v: 1, kind: 'checkpoint', batch: head.batch, hash: receiptHash(head) });
    t.match(first.headers.get('cache-control'), /^public, max-age=\d+$/);

    // The signature, checked from the published JWKS with node:crypto alone.
    const jwks = (await get(control, idx, '/api/receipts/keys')).body;
    const jwk = jwks.keys.find((k: { kid: string }) => k.kid === first.body.kid);
    t.ok(jwk, "the checkpoint's kid is in the JWKS");
    const { sig, ...unsigned } = first.body;
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    t.ok(verify(null, Buffer.from(canonicalize(unsigned)), key, Buffer.from(sig, 'base64url')), 'Ed25519 over the JCS bytes without sig');
    const keyring = new ReceiptKeyring(jwks);
    t.equal(keyring.checkCheckpointSignature(first.body), null, 'and by the shared verifier');
    t.match(
      keyring.checkCheckpointSignature({ ...first.body, batch: first.body.batch + 1 }),
      /does not verify/,
      'a changed batch breaks it',
    );

    // More batches; the consistency read leads from the first checkpoint to the second.
    await ingest(
      control,
      many(4, (i) => outcome({ endpoint_id: 'weather', at: NOW - 5_000 + i })),
    );
    clock.advance(2_000);
    await settle(control);
    const second = (await get(control, idx, '/api/receipts/checkpoint')).body;
    t.equal(second.batch, 5);
    const span = await get(control, idx, `/api/receipts/consistency?from=${first.body.batch}&to=${second.batch}`);
    t.equal(span.status, 200, span.text);
    t.same(
      span.body.receipts.map((r: ReceiptFields) => r.batch),
      [3, 4, 5],
    );
    const range = async (from: number, to: number) =>
      (await get(control, idx, `/api/receipts/consistency?from=${from}&to=${to}`)).body.receipts;
    t.match(
      await verifyConsistency(first.body, second, range, jwks),
      { ok: true, receipts: 5, reason: null },
      'every receipt from batch 1',
    );
    const forged = { ...first.body, hash: 'ab'.repeat(32) };
    t.match(
      await verifyConsistency(forged, second, range, jwks),
      { ok: false, reason: /signature does not verify/ },
      'a saved checkpoint must be signed',
    );
    const pages: [number, number][] = [];
    const counting = async (from: number, to: number) => {
      pages.push([from, to]);
      return range(from, to);
    };
    t.match(await verifyConsistency(second, second, counting, jwks), { ok: true, receipts: 5 }, 'a checkpoint is consistent with itself');
    t.same(pages, [[1, 5]], 'its history read from batch 1');

    for (const [query, status] of [
      ['from=4&to=3', 400],
      ['from=1&to=1001', 400],
      ['from=1', 400],
      ['to=3', 400],
      ['from=0&to=3', 400],
      ['from=01&to=3', 400],
      ['from=x&to=3', 400],
      ['from=1&to=6', 404],
      ['from=9&to=9', 404],
    ] as const) {
      const res = await get(control, idx, `/api/receipts/consistency?${query}`);
      t.equal(res.status, status, `${query}: ${status}`);
      t.equal(res.body.code, status === 400 ? 'svc_bad_request' : 'svc_not_found');
    }
    t.equal(
      (await get(control, idx, '/api/receipts/consistency?from=1&to=1000')).status,
      404,
      'a span of 1000 is allowed (batch 1000 is unknown)',
    );

    // The feed: one entry per batch, newest first, with its hash.
    const feed = await get(control, idx, '/receipts.atom');
    t.equal(feed.status, 200);
    t.match(feed.headers.get('content-type'), /^application\/atom\+xml/);
    const all = (await get(control, idx, '/api/receipts?limit=1000')).body.receipts as ReceiptFields[];
    const titles = [...feed.text.matchAll(/<title type="text">Batch (\d+): receipt hash ([0-9a-f]{64})<\/title>/g)].map((m) => [
      Number(m[1]),
      m[2],
    ]);
    t.same(
      titles,
      [...all].reverse().map((r) => [r.batch, receiptHash(r)]),
      'each batch with its hash, newest first',
    );

    // After a rotation the checkpoint is signed by the new key, still published.
    const rotated = await control.admin('POST', '/_admin/v1/receipts/rotate-key', {});
    t.equal(rotated.status, 200, rotated.text);
    clock.advance(2_000);
    const after = (await get(control, idx, '/api/receipts/checkpoint')).body;
    t.equal(after.kid, rotated.body.kid, 'signed by the current key');
    t.equal(after.hash, second.hash, 'the same head');
    t.equal(new ReceiptKeyring((await get(control, idx, '/api/receipts/keys')).body).checkCheckpointSignature(after), null);
  });
});
