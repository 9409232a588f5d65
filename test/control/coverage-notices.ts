/**
 * Control's evaluation of coverage (control/coverage.ts) and the record of the automatic pause,
 * on both stores: a new install is not paused and records nothing; the pool's free capital
 * below the largest covered call (or `pool.minFree`) pauses it, recorded once however often it
 * is evaluated (audit `pool.auto_pause` by `coverage`, a changelog notice); a deposit resumes it,
 * recorded once too; an operator's pause pauses without an automatic notice.
 */
import t, { type Test } from 'tap';
import { POOL_PAUSED_META } from '../../control/pool-pause';
import { startTestControl, type TestControl } from '../fixtures/control';
import { forEachStore, type StoreKind } from '../fixtures/stores';

/** Only the test's own passes (and the one at start) evaluate coverage. */
const HOUR_MS = 3_600_000;

/** The automatic pause's notices, newest first (the changelog's order). */
async function notices(control: TestControl): Promise<string[]> {
  const res = await control.admin('GET', '/_admin/v1/changelog');
  return (res.body.entries as { text: string; author: string }[]).filter((e) => e.author === 'coverage').map((e) => e.text);
}

async function audited(control: TestControl): Promise<{ action: string; actor: string; detail: unknown }[]> {
  const entries = [];
  for (const action of ['pool.auto_pause', 'pool.auto_resume']) {
    entries.push(
      ...((await control.admin('GET', `/_admin/v1/audit?action=${action}`)).body.entries as {
        action: string;
        actor: string;
        detail: unknown;
      }[]),
    );
  }
  return entries;
}

async function start(t: Test, kind: StoreKind, flags: Record<string, unknown> = {}): Promise<TestControl> {
  const control = await startTestControl(t, { store: kind, coverageCheckMs: HOUR_MS, flags });
  const added = await control.admin('POST', '/_admin/v1/endpoints', {
    id: 'ep',
    upstream: 'http://127.0.0.1:9/x',
    price: 1_000,
    premium: 100,
  });
  t.equal(added.status, 201, added.text);
  return control;
}

forEachStore(t, (t, kind) => {
  t.test('a new install is not paused, and records nothing', async (t) => {
    const control = await startTestControl(t, { store: kind, coverageCheckMs: HOUR_MS });
    t.same(await control.handle.coverage.runOnce(), {
      manual: false,
      automatic: false,
      paused: false,
      free: 0,
      min_free: 0,
      largest_call: 0,
    });
    t.same(await notices(control), [], 'no notice');
    t.same(await audited(control), [], 'no audit entry');
  });

  t.test('below the largest covered call: paused once; a deposit to twice it resumes it once', async (t) => {
    const control = await start(t, kind);
    const runOnce = () => control.handle.coverage.runOnce();
    t.same(await runOnce(), { manual: false, automatic: true, paused: true, free: 0, min_free: 1_100, largest_call: 1_100 });
    await runOnce();
    const paused = await notices(control);
    t.equal(paused.length, 1, 'one notice');
    t.match(paused, [/^Coverage paused automatically: the pool's free capital \(0\) is below its minimum \(1100\)/]);

    const funded = await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1_100 });
    t.equal(funded.status, 201, funded.text);
    t.match(await runOnce(), { automatic: true, paused: true, free: 1_100 }, 'back to the minimum: still paused (it resumes at twice it)');
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1_100 })).status, 201);
    t.match(await runOnce(), { automatic: false, paused: false, free: 2_200 });
    await runOnce();
    const resumed = await notices(control);
    t.equal(resumed.length, 2, 'one more');
    t.match(resumed, [
      /^Coverage resumed automatically: the pool's free capital \(2200\) is back to at least twice its minimum \(1100\)/,
      /^Coverage paused automatically/,
    ]);
    const audit = await audited(control);
    t.equal(audit.length, 2);
    t.match(
      audit.sort((a, b) => a.action.localeCompare(b.action)),
      [
        { action: 'pool.auto_pause', actor: 'coverage', detail: { free: 0, min_free: 1_100 } },
        { action: 'pool.auto_resume', actor: 'coverage', detail: { free: 2_200, min_free: 1_100 } },
      ],
      'each audited once, by coverage',
    );
  });

  t.test('pool.minFree sets the minimum; an operator pause is not an automatic one', async (t) => {
    const control = await start(t, kind, { 'pool.minFree': 5_000 });
    // Empty, the pool is below 5000 (with or without endpoints).
    t.match(await control.handle.coverage.runOnce(), { automatic: true, free: 0, min_free: 5_000 });
    const first = await notices(control);
    t.equal(first.length, 1);
    t.match(first, [/below its minimum \(5000\)/]);
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 4_999 })).status, 201);
    t.match(await control.handle.coverage.runOnce(), { automatic: true, free: 4_999, min_free: 5_000 });
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1 })).status, 201);
    t.match(await control.handle.coverage.runOnce(), { automatic: true, free: 5_000 }, 'at the minimum: still paused');
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 5_000 })).status, 201);
    t.same(await control.handle.coverage.runOnce(), {
      manual: false,
      automatic: false,
      paused: false,
      free: 10_000,
      min_free: 5_000,
      largest_call: 1_100,
    });
    const before = await notices(control);
    t.equal(before.length, 2, 'paused, then resumed');
    await control.handle.ctx.store.setMeta(POOL_PAUSED_META, 1);
    t.same(await control.handle.coverage.runOnce(), {
      manual: true,
      automatic: false,
      paused: true,
      free: 10_000,
      min_free: 5_000,
      largest_call: 1_100,
    });
    t.same(await notices(control), before, 'an operator pause writes no automatic notice');
  });
});
