// The per-call and per-batch refund caps on both stores, through control and svcctl: each
// settled call's refund and clamp, the batch rows, the ledger's totals, pool show's clamp
// counts, ledger verify, and the receipts of calls marked call_capped and batch_capped
// verifying (svcctl receipts verify, the production verifier and the SDK), and the
// indexer's activity page naming the clamps.
import t from 'tap';
import { SvcClient } from 'svc-monitor-sdk';
import { verifyCallProof } from '../../protocol/receipts-verify';
import type { OutcomeRecord } from '../../protocol/outcome';
import type { BatchView } from '../../protocol/settlement';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { outcome } from '../fixtures/settlement';
import { forEachStore } from '../fixtures/stores';

async function ship(control: TestControl, records: OutcomeRecord[]): Promise<void> {
  const res = await control.request(`${control.urls.control}/_sync/v1/outcomes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${control.syncToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ gateway_id: 'gw-test', records }),
  });
  t.equal(res.status, 200, `ship: ${res.text}`);
}

forEachStore(t, (t, kind) => {
  t.test('per-call and per-batch caps: clamped, marked, booked, verified', async (t) => {
    const clock = manualClock(Date.UTC(2030, 0, 1, 12, 30));
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      flags: { 'settler.cadenceMs': 3_600_000, 'settler.batchCap': 3 },
    });
    const cli = (...args: string[]) => runCli(args, { control });
    const add = (id: string, ...caps: string[]) =>
      cli('endpoints', 'add', id, '--upstream', 'http://127.0.0.1:9/x', '--price', '1000', '--premium', '100', ...caps);
    // `capped`: at most 800 a call (given in units) and 2000 a batch; `tied`: 500 a call, 1500 a
    // batch, so a batch's third refund meets both at once.
    const capped = await add('capped', '--refund-cap-per-call', '0.0008', '--refund-cap-per-batch', '2000');
    t.equal(capped.code, 0, capped.stderr);
    t.match(capped.stdout, /refund_cap_per_call: +800\n/);
    t.match(capped.stdout, /refund_cap_per_batch: +2000\n/);
    t.equal((await add('tied', '--refund-cap-per-call', '500', '--refund-cap-per-batch', '1500')).code, 0);
    t.equal((await add('free')).code, 0);
    await cli('pool', 'fund', '1.0');

    const h12 = Date.UTC(2030, 0, 1, 12, 0);
    let minute = 0;
    const calls = (endpoint_id: string, kinds: OutcomeRecord['outcome'][]) =>
      kinds.map((k) => outcome({ endpoint_id, outcome: k, started: h12 + minute++ * 60_000 }));
    // Three calls a batch (the settler's cap), in call start order.
    const c = calls('capped', [
      'server_error',
      'server_error',
      'server_error',
      'ok',
      'latency_breach',
      'network_error',
      'schema_mismatch',
      'client_error',
    ]);
    const d = calls('tied', ['server_error', 'server_error', 'server_error']);
    const f = calls('free', ['server_error']);
    await ship(control, [...c, ...d, ...f]);
    const run = await cli('settler', 'run-once', '--json');
    t.equal(run.code, 0, run.stderr);
    const result = run.json<{ batches: BatchView[]; calls: number; refunds: number; refunds_owed: number; clamped_calls: number }>();

    const store = control.handle.ctx.store;
    const rows = (records: OutcomeRecord[]) =>
      Promise.all(
        records.map(async (r) => {
          const row = (await store.outcomes.byCallId(r.call_id)) as unknown as Record<string, unknown>;
          return [row.premium, row.refund, row.refund_owed, row.clamp];
        }),
      );
    t.same(
      await rows(c),
      [
        // Batch 1: 800, 800 (per call), then the 400 left of the batch's 2000.
        [0, 800, 1100, 'call_capped'],
        [0, 800, 1100, 'call_capped'],
        [0, 400, 1100, 'batch_capped'],
        // Batch 2: a premium, then 800 and 800 (1600 of 2000).
        [100, 0, 0, null],
        [0, 800, 1100, 'call_capped'],
        [0, 800, 1100, 'call_capped'],
        // Batch 3: 800, and nothing for a client error.
        [0, 800, 1100, 'call_capped'],
        [0, 0, 0, null],
      ],
      'capped: each call its refund owed, what it was paid, and the binding limit',
    );
    t.same(
      await rows(d),
      [
        [0, 500, 1100, 'call_capped'],
        [0, 500, 1100, 'call_capped'],
        [0, 500, 1100, 'batch_capped'],
      ],
      'tied: 500 left of the batch and a per-call cap of 500 is batch_capped',
    );
    t.same(await rows(f), [[0, 1100, 1100, null]], 'free: paid in full');

    const batches = result.batches.map((b) => [b.endpoint_id, b.calls, b.premiums, b.refunds, b.refunds_owed, b.clamped_calls]);
    t.same(
      batches.sort(),
      [
        ['capped', 2, 0, 800, 1100, 1],
        ['capped', 3, 0, 2000, 3300, 3],
        ['capped', 3, 100, 1600, 2200, 2],
        ['free', 1, 0, 1100, 1100, 0],
        ['tied', 3, 0, 1500, 3300, 3],
      ].sort(),
      'the batch rows',
    );
    t.match(result, { calls: 12, refunds: 7000, refunds_owed: 11_000, clamped_calls: 9 });
    t.match(await store.ledger.totals(), {
      pool_size: 1_000_000 + 100 - 7000,
      total_premiums: 100,
      total_refunds: 7000,
      total_refunds_owed: 11_000,
      settled_batches: 5,
      settled_calls: 12,
    });
    t.same((await cli('pool', 'show', '--json')).json().clamped, { pool_depleted: 0, cap_clamped: 0, batch_capped: 2, call_capped: 7 });
    t.match(
      (await cli('pool', 'show')).stdout,
      /shortfall: +0\.004 \(4000 micro\) \(0 calls pool_depleted, 0 cap_clamped, 2 batch_capped, 7 call_capped\)/,
    );
    const verified = await cli('ledger', 'verify');
    t.equal(verified.code, 0, `ledger verify: ${verified.stdout}${verified.stderr}`);

    // The receipts: the whole chain, and the proofs of a call_capped and a batch_capped call.
    const indexer = control.urls.indexer;
    const chain = await cli('receipts', 'verify', '--indexer', indexer, '--json');
    t.equal(chain.code, 0, chain.stderr);
    t.match(chain.json(), { ok: true, receipts: 5, refunds: 7000, premiums: 100 });
    const jwks = await store.receipts.jwks();
    const sdk = new SvcClient({ indexerUrl: indexer });
    for (const [call, refund, clamp] of [
      [c[0]!, 800, 'call_capped'],
      [c[2]!, 400, 'batch_capped'],
      [d[2]!, 500, 'batch_capped'],
    ] as const) {
      const found = await store.receipts.proof(call.call_id);
      if (found.state !== 'settled') throw new Error(`call ${call.call_id} is not settled`);
      t.match(found.proof.leaf, { refund, clamp }, `the leaf carries ${clamp}`);
      t.match(verifyCallProof(found.proof, jwks, call.call_id), { ok: true, refund, reasons: [] }, `${clamp}: the verifier accepts it`);
      t.match(await sdk.verifyRefund(call.call_id), { ok: true, refund }, `${clamp}: the SDK accepts it`);
      const one = await cli('receipts', 'verify', '--indexer', indexer, '--call', call.call_id, '--json');
      t.equal(one.code, 0, `${clamp}: svcctl receipts verify --call (${one.stdout}${one.stderr})`);
    }

    // The indexer's activity page names the clamps in words.
    const page = await control.request(`${indexer}/activity`);
    t.equal(page.status, 200);
    t.match(page.text, /call capped/);
    t.match(page.text, /batch capped/);

    // A cap of 0 is no cap: lifted, the next failures are paid in full.
    const lifted = await cli('endpoints', 'update', 'capped', '--refund-cap-per-call', '0', '--refund-cap-per-batch', '0');
    t.equal(lifted.code, 0, lifted.stderr);
    t.match(lifted.stdout, /refund_cap_per_call: +none\n/);
    const later = calls('capped', ['server_error', 'server_error', 'server_error']);
    await ship(control, later);
    await cli('settler', 'run-once');
    t.same(await rows(later), [
      [0, 1100, 1100, null],
      [0, 1100, 1100, null],
      [0, 1100, 1100, null],
    ]);
    t.equal((await cli('ledger', 'verify')).code, 0, 'the ledger still verifies');
  });
});
