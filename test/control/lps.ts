/**
 * Liquidity providers own the pool's capital in shares (docs/money.md, "Pool capital"). On both
 * stores with a moved clock: three providers buy in at different values a share, a day of
 * mixed outcomes moves the value, a withdrawal is paid after its notice, one waits on locked
 * capital and is paid in part, then in full after a deposit; each provider ends with its
 * deposits plus its pro rata share of premiums less refunds, to the micro-unit, as a model
 * that knows nothing of shares computes it; `ledger verify` passes, and catches a share event,
 * a position and a withdrawal's locked capital changed behind its back. Bad input is a 4xx
 * naming the field, with nothing moved.
 */
import t, { type Test } from 'tap';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { outcome } from '../fixtures/settlement';
import { get } from '../fixtures/public';
import { openWithSql, T0 } from '../fixtures/ledger';
import { forEachStore } from '../fixtures/stores';
import { burnShares, exposureOf, lockedOf, mintShares, valueOf } from '../../control/store/lps';
import type { Outcome } from '../../protocol/outcome';
import { chartFrom, poolChart } from '../../control/pages/pool-chart';

const HOUR = 3_600_000;
const DAY0 = Date.parse('2026-11-29T08:00:00Z');
/** price 900 + premium 100: a refund is 1000; 10 % of each premium is the treasury's, 90 the pool's. */
const ENDPOINT = { id: 'ep', price: 900, premium: 100, treasury_fee_bps: 1000, refund_cap_per_hour: 6_018_000 };

t.test('the share arithmetic and its rounding', async (t) => {
  t.equal(mintShares(5, 0, 0), 5, 'the first deposit: a share is worth one micro-unit');
  t.equal(mintShares(1_001, 1_001, 1_000), 1_000);
  t.equal(mintShares(1_000, 1_001, 1_000), 999, 'minted rounded down: the pool keeps the remainder');
  t.equal(valueOf(999, 1_001, 1_000), 999, 'worth rounded down');
  t.equal(burnShares(500, 1_000, 1_001, 1_000), 500, 'burned rounded up: 499.5 → 500');
  t.equal(burnShares(1_001, 1_000, 1_001, 1_000), 1_000, 'the whole value burns the whole position');
  t.equal(mintShares(2 ** 52, 2 ** 52 + 1, 2 ** 52), 2 ** 52 - 1, 'products past 2^53 are exact');
  t.equal(valueOf(10, 0, 100), 0, 'nothing in the pool: worth nothing');
  t.equal(lockedOf(1_000, 600, 1.5), 900);
  t.equal(lockedOf(1_000, 900, 1.5), 1_000, 'never more than the capital');
  t.equal(lockedOf(-5, 10, 1), 0, 'never below nothing');
  const row = {
    endpoint_id: 'e',
    price: 900,
    premium: 100,
    refund_cap_per_call: 0,
    refund_cap_per_hour: 0,
    refunded_this_hour: 0,
    removed: false,
  };
  t.equal(exposureOf([{ ...row, before: 3, current: 2 }]), 5_000, 'no hourly cap: every recorded failure');
  t.equal(exposureOf([{ ...row, refund_cap_per_call: 400, before: 3, current: 2 }]), 2_000, 'at most the per-call cap each');
  t.equal(
    exposureOf([{ ...row, refund_cap_per_hour: 7_000, refunded_this_hour: 2_500, before: 3, current: 2 }]),
    3_000 + 4_500,
    "this hour's calls, recorded or not: what is left of the hourly cap",
  );
  t.equal(
    exposureOf([{ ...row, refund_cap_per_hour: 7_000, removed: true, before: 0, current: 2 }]),
    2_000,
    'a removed endpoint takes no new calls',
  );
});

t.test("the pool's 90-day chart", async (t) => {
  const now = Date.parse('2026-11-29T12:00:00Z');
  t.match(poolChart([], now), /No history of the pool's capital yet/);
  const day = (d: string, capital: number, exposure: number) => ({ day: d, capital, exposure, locked: Math.min(capital, exposure) });
  const chart = poolChart(
    [day('2026-11-27', 100, 50), day('2026-11-28', 200, 100), day('2026-11-29', 200, 0), day('2026-08-01', 999_999, 0)],
    now,
  );
  t.match(chart, /3 days recorded; on 2026-11-29 capital 0\.0002, highest exposure 0/, 'a day outside the 90 is left out');
  t.match(
    chart,
    /<path class="capital" d="M349\.04 45L353\.02 3L357 3"\/>/,
    'the scale tops at the highest figure shown; one point per day',
  );
  t.match(chart, /<path class="exposure" d="M349\.04 66L353\.02 45L357 87"\/>/);
  t.equal(chartFrom(now), '2026-09-01');
});

/** Each provider's claim on the pool as a fund's books would keep it: no shares, only pro rata shares of each period's result. */
class Books {
  readonly claims = new Map<string, number>();
  deposit(who: string, amount: number): void {
    this.claims.set(who, (this.claims.get(who) ?? 0) + amount);
  }
  withdraw(who: string, amount: number): void {
    this.claims.set(who, this.claims.get(who)! - amount);
  }
  /** A period's premiums (after the fee) less refunds, shared in proportion to the claims held through it. */
  result(t: Test, amount: number): void {
    const total = [...this.claims.values()].reduce((a, b) => a + b, 0);
    for (const [who, claim] of this.claims) {
      const share = (amount * claim) / total;
      t.ok(Number.isInteger(share), `the books share ${amount} exactly (${who}: ${share})`);
      this.claims.set(who, claim + share);
    }
  }
}

/** Calls of one period: `ok` paid ones and `failed` refunded ones, plus calls that move nothing. */
async function period(
  c: TestControl,
  clock: { set(ms: number): void; now(): number },
  from: number,
  ok: number,
  failed: number,
): Promise<void> {
  const records = [];
  const kinds: [Outcome, number][] = [
    ['ok', ok],
    ['server_error', failed],
    ['client_error', 3],
  ];
  let at = from;
  for (const [kind, n] of kinds)
    for (let i = 0; i < n; i++) records.push(outcome({ key_id: 'key_agent', endpoint_id: 'ep', outcome: kind, started: (at += 1_000) }));
  records.push(outcome({ key_id: null, endpoint_id: 'ep', outcome: 'server_error', started: (at += 1_000) }));
  clock.set(at + 1_000);
  await c.handle.ctx.store.outcomes.ingest(records, clock.now());
  const run = await c.admin('POST', '/_admin/v1/settler/run-once');
  if (run.status !== 200) throw new Error(run.text);
}

const valueOfLp = async (c: TestControl, name: string): Promise<number> =>
  (await c.admin('GET', `/_admin/v1/lps/${name}`)).body.value as number;

forEachStore(t, (t, kind) => {
  t.test('three providers, a day of outcomes, a withdrawal after its notice and one waiting on locked capital', async (t) => {
    const clock = manualClock(DAY0);
    const c = await startTestControl(t, { store: kind, now: clock.now });
    const added = await c.admin('POST', '/_admin/v1/endpoints', {
      id: 'ep',
      upstream: 'http://127.0.0.1:9/',
      price: ENDPOINT.price,
      premium: ENDPOINT.premium,
      treasury_fee_bps: ENDPOINT.treasury_fee_bps,
      refund_cap_per_hour: ENDPOINT.refund_cap_per_hour,
    });
    t.equal(added.status, 201, added.text);
    for (const name of ['alice', 'bob', 'carol']) t.equal((await c.admin('POST', '/_admin/v1/lps', { name })).status, 201);
    const books = new Books();
    const deposit = async (name: string, amount: number, shares: number) => {
      const d = await c.admin('POST', `/_admin/v1/lps/${name}/deposit`, { amount, reference: `${name}-${clock.now()}` });
      t.equal(d.status, 201, d.text);
      t.equal(d.body.shares, shares, `${name} buys ${shares} shares for ${amount}`);
      books.deposit(name, amount);
    };

    // 08:00 alice buys in at one micro-unit a share; the morning earns 200 × 90 − 12 × 1000.
    await deposit('alice', 6_000_000, 6_000_000);
    await period(c, clock, DAY0, 200, 12);
    books.result(t, 6_000);
    // 10:00 bob buys in at 1.001; the late morning earns 9,000.
    clock.set(DAY0 + 2 * HOUR);
    await deposit('bob', 3_003_000, 3_000_000);
    await period(c, clock, DAY0 + 2 * HOUR, 300, 18);
    books.result(t, 9_000);
    // 12:00 carol buys in at 1.002; bob and alice ask for some back.
    clock.set(DAY0 + 4 * HOUR);
    await deposit('carol', 1_002_000, 1_000_000);
    const bobAsks = await c.admin('POST', '/_admin/v1/lps/bob/withdrawals', { amount: 1_003_000 });
    t.equal(bobAsks.status, 201, bobAsks.text);
    t.match(bobAsks.body, {
      provider: 'bob',
      amount: 1_003_000,
      paid: 0,
      status: 'pending',
      due_at: new Date(DAY0 + 76 * HOUR).toISOString(),
    });
    const aliceAsks = await c.admin('POST', '/_admin/v1/lps/alice/withdrawals', { amount: 5_015_000 });
    t.equal(aliceAsks.status, 201, aliceAsks.text);
    // The afternoon earns 10,000.
    await period(c, clock, DAY0 + 4 * HOUR, 400, 26);
    books.result(t, 10_000);

    clock.set(DAY0 + 75 * HOUR);
    t.same(await c.handle.withdrawals.runOnce(), [], 'nothing is paid before its notice ends');

    // Day 4, 12:00: the hourly cap locks 6,018,000 of the 10,030,000; 4,012,000 is free.
    clock.set(DAY0 + 76 * HOUR);
    const pool = (await c.admin('GET', '/_admin/v1/lps')).body.pool;
    t.match(pool, {
      capital: 10_030_000,
      exposure: 6_018_000,
      locked: 6_018_000,
      free: 4_012_000,
      shares: 10_000_000,
      value_per_share: 1.003,
      providers: 3,
      pending_withdrawals: 2,
    });
    const paid = await c.handle.withdrawals.runOnce();
    t.same(
      paid.map((p) => [p.withdrawal.provider, p.amount, p.shares, p.locked]),
      [
        ['bob', 1_003_000, 1_000_000, 6_018_000],
        ['alice', 3_009_000, 3_000_000, 6_018_000],
      ],
      "bob's paid in full; alice's in part, up to the locked capital",
    );
    books.withdraw('bob', 1_003_000);
    books.withdraw('alice', 3_009_000);
    const waiting = (await c.admin('GET', '/_admin/v1/lp-withdrawals?pending=true')).body;
    t.match(waiting.withdrawals, [{ provider: 'alice', amount: 5_015_000, paid: 3_009_000, status: 'pending' }], 'the rest waits');
    t.match(waiting.pool, { capital: 6_018_000, locked: 6_018_000, free: 0 });
    t.same(await c.handle.withdrawals.runOnce(), [], 'no free capital: nothing more is paid');

    // Carol's second deposit frees capital; the next pass pays alice the rest.
    await deposit('carol', 2_006_000, 2_000_000);
    const rest = await c.handle.withdrawals.runOnce();
    t.same(
      rest.map((p) => [p.withdrawal.provider, p.amount]),
      [['alice', 2_006_000]],
    );
    books.withdraw('alice', 2_006_000);
    const done = (await c.admin('GET', `/_admin/v1/lp-withdrawals?provider=alice`)).body.withdrawals;
    t.match(done, [{ amount: 5_015_000, paid: 5_015_000, status: 'paid', closed_by: 'withdrawals' }]);

    for (const [name, claim] of books.claims)
      t.equal(await valueOfLp(c, name), claim, `${name} holds what the books say, to the micro-unit`);
    const alice = (await c.admin('GET', '/_admin/v1/lps/alice')).body;
    t.match(alice, { shares: 1_000_000, value: 1_003_000, deposited: 6_000_000, withdrawn: 5_015_000, gain: 18_000, pending: 0 });
    t.same(
      alice.events.map((e: { kind: string; shares: number }) => [e.kind, e.shares]),
      [
        ['withdrawal', -2_000_000],
        ['withdrawal', -3_000_000],
        ['deposit', 6_000_000],
      ],
    );
    const show = (await c.admin('GET', '/_admin/v1/pool')).body;
    t.match(show, {
      pool: 6_018_000,
      funded: 6_000_000 + 3_003_000 + 1_002_000 + 2_006_000,
      withdrawn: 5_015_000 + 1_003_000,
      capital: { capital: 6_018_000, shares: 6_000_000, locked: 6_018_000, free: 0, pending_withdrawals: 0 },
    });
    const verify = await c.admin('GET', '/_admin/v1/ledger/verify');
    t.equal(verify.body.ok, true, verify.body.violation ?? 'ledger verify passes');

    // The public sees the same figures, providers as a count, and the pool's days on a chart.
    const figures = { capital: 6_018_000, locked: 6_018_000, free: 0, exposure: 6_018_000, providers: 3, pending_withdrawals: 0 };
    const stats = await get(c, c.urls.indexer, '/api/stats');
    t.match(stats.body, { pool_size: 6_018_000, pool: figures });
    t.notOk(JSON.stringify(stats.body.pool).includes('alice'), 'no provider is named');
    t.match((await get(c, c.urls.api, '/api/v1/status')).body.bootstrap.pool, { funded: true, balance: 6_018_000, capital: figures });
    for (const [base, page] of [
      [c.urls.api, '/status'],
      [c.urls.indexer, '/activity'],
    ] as const) {
      const html = (await get(c, base, page, { accept: 'text/html' })).text;
      t.match(html, /6\.018 locked against an exposure of 6\.018, 0 free; 3 liquidity providers at 1\.003 a share/, `${page}: the figures`);
      t.match(
        html,
        /<figure id="pool-chart"><svg class="pool-chart"[^>]*aria-label="The pool&#39;s capital and its exposure per day over the last 90 days: 2 days recorded; on 2026-12-02 capital 6\.018, highest exposure 6\.018"/,
        `${page}: the chart`,
      );
      t.match(
        html,
        /<path class="capital" d="M[0-9. ML]+"\/><path class="exposure" d="M[0-9. ML]+"/,
        `${page}: one point per day sampled, the line broken between days apart`,
      );
    }
    const audit = (await c.admin('GET', '/_admin/v1/audit?action=lps.withdrawals.paid')).body.entries;
    t.equal(audit.length, 2, 'each pass that paid is audited');
    t.equal((await c.admin('GET', '/_admin/v1/audit?action=lps.deposit')).body.entries.length, 4);
  });

  t.test('bad input: 4xx naming the field, nothing moved', async (t) => {
    const clock = manualClock(DAY0);
    const c = await startTestControl(t, { store: kind, now: clock.now });
    t.equal((await c.admin('POST', '/_admin/v1/lps', { name: 'dana' })).status, 201);
    const taken = await c.admin('POST', '/_admin/v1/lps', { name: 'dana' });
    t.match(taken, { status: 409, body: { code: 'svc_conflict', reason: 'name_taken', field: 'name' } });
    t.match(await c.admin('POST', '/_admin/v1/lps', { name: 'lp_x' }), { status: 400, body: { errors: [{ field: 'name' }] } });
    t.match(await c.admin('POST', '/_admin/v1/lps/nobody/deposit', { amount: 5, reference: 'r' }), { status: 404, body: { field: 'id' } });
    for (const amount of [0, -5, 1.5]) {
      t.match(
        await c.admin('POST', '/_admin/v1/lps/dana/deposit', { amount, reference: 'r' }),
        { status: 400, body: { errors: [{ field: 'amount' }] } },
        `amount ${amount}`,
      );
      t.match(await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { amount }), {
        status: 400,
        body: { errors: [{ field: 'amount' }] },
      });
    }
    t.match(
      await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', {}),
      { status: 400, body: { errors: [{ field: 'amount' }] } },
      'an amount or all',
    );
    t.match(await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { amount: 5, all: true }), { status: 400 });
    t.match(
      await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { all: true }),
      { status: 409, body: { reason: 'over_position', field: 'amount' } },
      'nothing to withdraw',
    );

    t.equal((await c.admin('POST', '/_admin/v1/lps/dana/deposit', { amount: 1_000, reference: 'inv-1' })).status, 201);
    const replay = await c.admin('POST', '/_admin/v1/lps/dana/deposit', { amount: 1_000, reference: 'inv-1' });
    t.match(replay, { status: 200, body: { created: false, shares: 1_000 } }, 'a replayed reference answers the first deposit');
    t.match(await c.admin('POST', '/_admin/v1/lps/dana/deposit', { amount: 2_000, reference: 'inv-1' }), {
      status: 409,
      body: { reason: 'reference_used', field: 'reference' },
    });
    t.match(await c.admin('POST', '/_admin/v1/lps/operator/deposit', { amount: 1_000, reference: 'inv-1' }), {
      status: 409,
      body: { reason: 'reference_used' },
    });
    t.match(
      await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { amount: 1_001 }),
      { status: 409, body: { reason: 'over_position', field: 'amount' } },
      'above the position',
    );
    const asked = await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { amount: 600 });
    t.equal(asked.status, 201);
    t.match(
      await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { amount: 401 }),
      { status: 409, body: { reason: 'over_position' } },
      'above what is left once the pending ones are counted',
    );
    const cancel = await c.admin('POST', `/_admin/v1/lp-withdrawals/${asked.body.id}/cancel`);
    t.match(cancel, { status: 200, body: { status: 'cancelled', closed_by: 'root' } });
    t.match(await c.admin('POST', `/_admin/v1/lp-withdrawals/${asked.body.id}/cancel`), { status: 409, body: { reason: 'not_pending' } });
    t.match(await c.admin('POST', '/_admin/v1/lp-withdrawals/999/cancel'), { status: 404, body: { field: 'id' } });
    t.match(await c.admin('POST', '/_admin/v1/lp-withdrawals/x/cancel'), { status: 404 });

    const all = await c.admin('POST', '/_admin/v1/lps/dana/withdrawals', { all: true });
    clock.set(DAY0 + 72 * HOUR);
    t.same(
      (await c.handle.withdrawals.runOnce()).map((p) => p.amount),
      [1_000],
      'the whole position, paid after its notice',
    );
    t.match(
      await c.admin('POST', `/_admin/v1/lp-withdrawals/${all.body.id}/cancel`),
      { status: 409, body: { reason: 'not_pending' } },
      'a paid withdrawal cannot be cancelled',
    );
    t.match((await c.admin('GET', '/_admin/v1/lps/dana')).body, { shares: 0, value: 0, deposited: 1_000, withdrawn: 1_000 });
    t.equal((await c.admin('GET', '/_admin/v1/ledger/verify')).body.ok, true);
  });

  t.test('pool fund is the operator’s position; ledger verify catches shares changed behind its back', async (t) => {
    /** The operator funds 2,000, dana deposits 1,000 and is paid 500 of it back. */
    const setUp = async (t: Test) => {
      const { store, exec } = await openWithSql(t, kind);
      const by = { actor: 'root', now: T0 };
      await store.mutate(by, { action: 'pool.fund' }, (tx) => tx.ledger.fund(2_000, T0, 'root', 'seed'));
      const dana = (await store.mutate(by, { action: 'lps.add' }, (tx) => tx.lps.add('dana', T0, 'root'))).result;
      await store.mutate(by, { action: 'lps.deposit' }, (tx) => tx.lps.deposit(dana.id, 1_000, 'lp_deposit', 'd-1', T0, 'root'));
      const w = (await store.mutate(by, { action: 'lps.withdraw' }, (tx) => tx.lps.requestWithdrawal(dana.id, 500, T0, 0, 'root'))).result;
      const paid = await store.mutate(by, { action: 'lps.withdrawals.paid' }, (tx) => tx.lps.payDue(T0, 1, 'w'));
      return { store, exec, dana, w, paid: paid.result };
    };
    const { store, dana, paid } = await setUp(t);
    t.equal((await store.lps.get('operator'))!.shares, 2_000, "pool fund minted the operator's shares");
    t.same(
      paid.map((p) => [p.amount, p.shares, p.locked]),
      [[500, 500, 0]],
    );
    t.equal((await store.lps.get(dana.id))!.shares, 500);
    t.equal((await store.ledger.verify()).ok, true);

    const corruptions: [string, (ids: { dana: string; w: number }) => string, RegExp][] = [
      [
        'a deposit minting more',
        (i) => `UPDATE lp_share_events SET shares = shares + 1 WHERE kind = 'deposit' AND provider_id = '${i.dana}'`,
        /provider lp_\w+ holds 500 shares; its share events add up to 501/,
      ],
      [
        'a deposit minting more, its position too',
        (i) =>
          `UPDATE lp_share_events SET shares = shares + 1 WHERE kind = 'deposit' AND provider_id = '${i.dana}'; UPDATE liquidity_providers SET shares = shares + 1 WHERE id = '${i.dana}'`,
        /share event \d+ \(deposit\) of lp_\w+ mints 1001 shares for 1000; the rounding gives 1000/,
      ],
      [
        'a position grown',
        () => `UPDATE liquidity_providers SET shares = shares + 7 WHERE id = 'operator'`,
        /provider operator holds 2007 shares/,
      ],
      [
        'a payment from locked capital',
        () => `UPDATE lp_share_events SET locked = 2600 WHERE kind = 'withdrawal'`,
        /withdrawal payment \d+ paid 500 from capital 3000 with 2600 of it locked/,
      ],
      [
        'a withdrawal recorded as paid more',
        (i) => `UPDATE lp_withdrawals SET paid = 400 WHERE id = ${i.w}`,
        /withdrawal \d+ records 400 paid; its payments add up to 500/,
      ],
      [
        'a fund without its shares',
        () => `DELETE FROM lp_share_events WHERE kind = 'deposit' AND provider_id = 'operator'`,
        /fund transfer \d+ moved the pool's capital without a share event/,
      ],
    ];
    for (const [label, statement, pattern] of corruptions) {
      await t.test(label, async (t) => {
        const at = await setUp(t);
        await at.exec(statement({ dana: at.dana.id, w: at.w.id }));
        const verify = await at.store.ledger.verify();
        t.notOk(verify.ok, `${label}: caught`);
        t.match(verify.violation, pattern, `${label}: ${verify.violation}`);
      });
    }
  });
});
