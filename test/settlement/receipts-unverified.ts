/**
 * The indexer serves only receipts control verified, and signs checkpoints only over a chain
 * that verifies (control/receipts/chain-guard.ts), on both stores. A running control settles
 * five batches and serves a checkpoint and the consistency read (so it has verified the chain);
 * then its database is edited by direct SQL:
 *
 * - batch 2 changed without re-signing: the consistency read answers 503
 *   `svc_receipts_unverified` naming batch 2 instead of serving it;
 * - the chain rewritten from batch 2 to the head and re-signed with the data dir's key (a chain
 *   every verifier accepts): the next checkpoint is refused instead of signed over it.
 *
 * Either way the settler halts and says so: `settler status` (the batch, no batch without a
 * receipt, restore and restart), `svcctl status`, the public status, and run-once answers 409
 * `svc_settler_halted`.
 */
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey, sign } from 'node:crypto';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import type { Receipt } from '../../protocol/receipts';
import type { SettlerStatus } from '../../protocol/settlement';
import { receiptHash, receiptSigningBytes } from '../../protocol/receipts-verify';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { SDK_UA, addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { rawQuery, type Install } from '../fixtures/store-sql';
import { forEachStore, type StoreKind } from '../fixtures/stores';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
const COLUMNS = ['prev', 'refunds', 'sig'] as const;

async function settledControl(t: Test, kind: StoreKind) {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, {
    store: kind,
    now: clock.now,
    env: { SVC_SETTLER_CADENCE_MS: '3600000', SVC_SETTLER_BATCH_CAP: '2', SVC_CACHE_STATS_TTL_S: '1', SVC_CACHE_STATUS_TTL_S: '1' },
  });
  await addEndpoint(control, 'weather', { price: 2_000, premium: 100 });
  t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 50_000_000 })).status, 201);
  await ingest(
    control,
    many(10, (i) => outcome({ endpoint_id: 'weather', at: NOW - 10_000 + i, outcome: i % 3 ? 'ok' : 'server_error' })),
  );
  clock.advance(1_000);
  t.equal((await control.admin('POST', '/_admin/v1/settler/run-once', {})).status, 200);
  const idx = control.urls.indexer;
  t.equal((await get(control, idx, '/api/receipts/checkpoint')).status, 200, 'a checkpoint over the chain as settled');
  const span = await get(control, idx, '/api/receipts/consistency?from=1&to=5');
  t.equal(span.status, 200, 'and the consistency read');
  const at: Install = { kind, dataDir: control.dataDir, url: control.config.databaseUrl ?? null };
  const edit = (r: Receipt) =>
    rawQuery(at, `UPDATE receipts SET prev = ?, refunds = ?, sig = ? WHERE batch = ?`, [...COLUMNS.map((c) => r[c]), r.batch]);
  clock.advance(2_000); // past the answers' cache
  return { control, clock, chain: span.body.receipts as Receipt[], edit };
}

/** The settler halted on `batch` with the chain's reason, everywhere it shows. */
async function halted(t: Test, control: TestControl, batch: number, reason: RegExp): Promise<void> {
  const status = await control.admin<SettlerStatus>('GET', '/_admin/v1/settler');
  t.match(status.body, { state: 'halted', halted: { batch, batches_without_receipt: 0, reason } }, 'settler status: halted');
  const run = await control.admin('POST', '/_admin/v1/settler/run-once', {});
  t.equal(run.status, 409);
  t.match(run.body, { code: 'svc_settler_halted', batch, detail: /restore the database from a backup and restart control/ });
  const text = await runCli(['settler', 'status'], { control });
  t.match(text.stdout, /state: +halted[\s\S]*halted: +the receipt chain does not verify/);
  t.match(text.stdout, /until the database is restored from a backup and control restarted/);
  t.match((await runCli(['status'], { control })).stdout, /settler +halted,[^\n]*\n +halted: the receipt chain does not verify/);
  const pub = await control.request(`${control.urls.api}/api/v1/status`, { headers: { 'user-agent': SDK_UA } });
  t.equal(pub.body.settler.state, 'halted', 'the public status');
}

forEachStore(t, (t, kind) => {
  t.test('a receipt changed under a running control is not served', async (t) => {
    const { control, chain, edit } = await settledControl(t, kind);
    await edit({ ...chain[1]!, refunds: chain[1]!.refunds + 1 });
    const idx = control.urls.indexer;
    const refused = await get(control, idx, '/api/receipts/consistency?from=1&to=5');
    t.equal(refused.status, 503, refused.text);
    t.match(refused.headers.get('content-type'), /^application\/problem\+json/);
    t.match(refused.body, { code: 'svc_receipts_unverified', detail: /batch 2: the receipt changed after control verified it/ });
    const checkpoint = await get(control, idx, '/api/receipts/checkpoint');
    t.equal(checkpoint.status, 503, 'no checkpoint either');
    t.equal(checkpoint.body.code, 'svc_receipts_unverified');
    t.equal((await get(control, idx, '/api/receipts/consistency?from=4&to=5')).status, 503, 'nothing else served meanwhile');
    await halted(t, control, 2, /^the receipt chain does not verify: batch 2: /);
  });

  t.test('a chain rewritten and re-signed with the key gets no checkpoint', async (t) => {
    const { control, chain, edit } = await settledControl(t, kind);
    const key = createPrivateKey(readFileSync(join(control.dataDir, RECEIPT_KEY_FILE), 'utf8'));
    let prev = chain[0]!;
    for (const r of chain.slice(1)) {
      const { sig: _sig, ...rest } = { ...r, prev: receiptHash(prev), refunds: r.batch === 2 ? r.refunds + 1 : r.refunds };
      const signed = { ...rest, sig: sign(null, receiptSigningBytes(rest), key).toString('base64url') };
      await edit(signed);
      prev = signed;
    }
    const checkpoint = await get(control, control.urls.indexer, '/api/receipts/checkpoint');
    t.equal(checkpoint.status, 503, checkpoint.text);
    t.match(checkpoint.body, { code: 'svc_receipts_unverified', detail: /batch 5: the receipt changed after control verified it/ });
    await halted(t, control, 5, /^the receipt chain does not verify: batch 5: /);
  });
});
