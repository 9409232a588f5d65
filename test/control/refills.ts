/**
 * Refills: an account's balance brought up to its rule's amount once a period (UTC day, or a
 * month's refill day, the last when the month is shorter), at once when the rule is set, by the
 * refill loop after. On both stores with a moved clock: one refill per period however often the
 * loop runs; bad rules 400 naming the field; each refill audited under the rule's operator;
 * `ledger verify` checks them; with `money.approvals: 2` a rule waits for a second operator.
 * Several controls and a restart: test/control/refills-cluster.ts.
 */
import t, { type Test } from 'tap';
import { refillPeriod } from '../../control/store/accounts';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { openWithSql } from '../fixtures/ledger';
import { forEachStore } from '../fixtures/stores';
import { startTeamControl } from '../fixtures/team';

const DAY = 86_400_000;
const WALLET = '0x52908400098527886E0F7030069857D2E4169EE7';

t.test('the period a time falls in', async (t) => {
  const at = (iso: string) => Date.parse(iso);
  const daily = { every: 'day', day: null } as const;
  t.same(refillPeriod(daily, at('2026-11-29T23:59:59.999Z')), {
    period: '2026-11-29',
    start: at('2026-11-29T00:00:00Z'),
    end: at('2026-11-30T00:00:00Z'),
  });
  t.equal(refillPeriod(daily, at('2026-11-30T00:00:00Z')).period, '2026-11-30', 'a new day at midnight UTC');
  const first = { every: 'month', day: null } as const;
  t.same(refillPeriod(first, at('2026-01-01T00:00:00Z')), {
    period: '2026-01',
    start: at('2026-01-01T00:00:00Z'),
    end: at('2026-02-01T00:00:00Z'),
  });
  const on31 = { every: 'month', day: 31 } as const;
  t.same(
    refillPeriod(on31, at('2027-02-28T00:00:00Z')),
    { period: '2027-02', start: at('2027-02-28T00:00:00Z'), end: at('2027-03-31T00:00:00Z') },
    "day 31 is February's last day",
  );
  t.equal(refillPeriod(on31, at('2028-02-28T23:00:00Z')).period, '2028-01', 'in a leap year, the 29th');
  t.equal(refillPeriod(on31, at('2028-02-29T00:00:00Z')).period, '2028-02');
  const on15 = { every: 'month', day: 15 } as const;
  t.same(
    refillPeriod(on15, at('2026-01-14T12:00:00Z')),
    { period: '2025-12', start: at('2025-12-15T00:00:00Z'), end: at('2026-01-15T00:00:00Z') },
    "before this month's day, last month's period (across the year)",
  );
  t.equal(refillPeriod(on15, at('2026-12-31T00:00:00Z')).end, at('2027-01-15T00:00:00Z'));
});

/** The account's balance as the admin API shows it. */
const balanceOf = async (c: TestControl, account: string): Promise<number> =>
  (await c.admin('GET', `/_admin/v1/accounts/${account}`)).body.balance as number;

/** Spend `amount` of the account's balance: a payout to its wallet, marked paid. */
async function spend(t: Test, c: TestControl, amount: number, reference: string): Promise<void> {
  const paid = await c.admin('POST', '/_admin/v1/payouts/mark-paid', { wallet: WALLET, amount, reference });
  t.equal(paid.status, 201, paid.text);
}

/** The refills made, newest first, as the audit log has them. */
const refillsMade = async (c: TestControl): Promise<{ period: string; amount: number }[]> => {
  const audit = (await c.admin('GET', '/_admin/v1/audit?action=accounts.refilled')).body.entries as { detail: Record<string, unknown> }[];
  return audit.map((e) => ({ period: e.detail.period as string, amount: e.detail.amount as number }));
};

forEachStore(t, (t, kind) => {
  t.test('once per period: at once when set, then each day, whatever the loop runs', async (t) => {
    const clock = manualClock(Date.parse('2026-11-29T10:00:00Z'));
    const c = await startTestControl(t, { store: kind, now: clock.now });
    const id = (await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' })).body.id as string;
    t.equal((await c.admin('PUT', '/_admin/v1/accounts/acme/wallet', { wallet: WALLET })).status, 200);

    const set = await c.admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 10_000_000, every: 'day' });
    t.equal(set.status, 200, set.text);
    t.match(set.body, {
      id,
      balance: 10_000_000,
      refill: { amount: 10_000_000, every: 'day', day: null, set_by: 'root', next_at: '2026-11-30T00:00:00.000Z' },
      refilled: { period: '2026-11-29', target: 10_000_000, amount: 10_000_000, at: '2026-11-29T10:00:00.000Z' },
    });
    t.type(set.body.refilled.transfer_id, 'number');

    await spend(t, c, 4_000_000, 'p1');
    t.same(await c.handle.refills.runOnce(), [], 'the loop: this period is refilled already');
    t.equal(await balanceOf(c, id), 6_000_000, 'not topped up again the same day');
    const again = await c.admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 20_000_000, every: 'day' });
    t.match(again.body, { balance: 6_000_000, refilled: { period: '2026-11-29', amount: 10_000_000 } }, 'a new rule: from the next period');

    clock.set(Date.parse('2026-11-30T00:00:30Z'));
    const made = await c.handle.refills.runOnce();
    t.match(made, [{ account_id: id, period: '2026-11-30', target: 20_000_000, amount: 14_000_000, created: true }]);
    t.same(await c.handle.refills.runOnce(), [], 'once');
    t.equal(await balanceOf(c, id), 20_000_000, 'up to the amount');

    // A day with the balance over the amount: the period is recorded, nothing moves.
    const deposit = await c.admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 5_000_000, reference: 'd1' });
    t.equal(deposit.status, 201);
    clock.advance(DAY);
    t.match(await c.handle.refills.runOnce(), [{ period: '2026-12-01', amount: 0, transfer_id: null }]);
    t.equal(await balanceOf(c, id), 25_000_000);
    // Three days later (the control was not running in between): the current period only.
    clock.advance(3 * DAY);
    await spend(t, c, 24_000_000, 'p2');
    t.match(await c.handle.refills.runOnce(), [{ period: '2026-12-04', amount: 19_000_000 }]);

    t.same(
      await refillsMade(c),
      [
        { period: '2026-12-04', amount: 19_000_000 },
        { period: '2026-12-01', amount: 0 },
        { period: '2026-11-30', amount: 14_000_000 },
        { period: '2026-11-29', amount: 10_000_000 },
      ],
      'one refill per period, newest first',
    );
    const audit = (await c.admin('GET', '/_admin/v1/audit?action=accounts.refilled')).body.entries as Record<string, unknown>[];
    t.ok(
      audit.every((e) => e.actor === 'root' && e.target === id),
      'each under the name of the operator who set the rule',
    );
    const verify = await c.admin('GET', '/_admin/v1/ledger/verify');
    t.equal(verify.body.violation, null, JSON.stringify(verify.body));

    const never = await c.admin('DELETE', '/_admin/v1/accounts/acme/refill');
    t.equal(never.status, 200);
    t.equal(never.body.refill, null);
    clock.advance(DAY);
    t.same(await c.handle.refills.runOnce(), [], 'no rule, no refill');
    const rules = (await c.admin('GET', '/_admin/v1/audit?action=accounts.refill.clear')).body.entries as Record<string, unknown>[];
    t.match(rules, [{ actor: 'root', target: id, detail: { previous: { amount: 20_000_000, every: 'day', day: null } } }]);
  });

  t.test('monthly on a day, the last when the month is shorter', async (t) => {
    const clock = manualClock(Date.parse('2027-01-31T08:00:00Z'));
    const c = await startTestControl(t, { store: kind, now: clock.now });
    await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' });
    const set = await c.admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 3_000_000, every: 'month', day: 31 });
    t.match(set.body, {
      refill: { every: 'month', day: 31, next_at: '2027-02-28T00:00:00.000Z' },
      refilled: { period: '2027-01', amount: 3_000_000 },
    });
    clock.set(Date.parse('2027-02-27T23:59:00Z'));
    t.same(await c.handle.refills.runOnce(), [], 'not before its day');
    clock.set(Date.parse('2027-02-28T00:01:00Z'));
    t.match(await c.handle.refills.runOnce(), [{ period: '2027-02', amount: 0 }], "February's period on the 28th");
    const shown = await c.admin('GET', '/_admin/v1/accounts/acme');
    t.equal(shown.body.refill.next_at, '2027-03-31T00:00:00.000Z');
  });

  t.test('bad rules: 400 naming the field, nothing set', async (t) => {
    const c = await startTestControl(t, { store: kind });
    await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' });
    const bad: [unknown, string][] = [
      [{ amount: 0, every: 'day' }, 'amount'],
      [{ amount: -1, every: 'day' }, 'amount'],
      [{ amount: 1.5, every: 'day' }, 'amount'],
      [{ amount: 5, every: 'week' }, 'every'],
      [{ amount: 5 }, 'every'],
      [{ amount: 5, every: 'month', day: 0 }, 'day'],
      [{ amount: 5, every: 'month', day: 32 }, 'day'],
      [{ amount: 5, every: 'day', day: 3 }, 'day'],
      [{ amount: 5, every: 'day', note: 'x' }, 'note'],
    ];
    for (const [body, field] of bad) {
      const res = await c.admin('PUT', '/_admin/v1/accounts/acme/refill', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.ok(
        (res.body.errors as { field: string }[]).some((e) => e.field === field),
        `names ${field}: ${JSON.stringify(res.body.errors)}`,
      );
    }
    t.equal((await c.admin('PUT', '/_admin/v1/accounts/nobody/refill', { amount: 5, every: 'day' })).status, 404);
    const shown = await c.admin('GET', '/_admin/v1/accounts/acme');
    t.match(shown.body, { refill: null, balance: 0 }, 'nothing set, nothing moved');

    const low = await c.admin('PATCH', '/_admin/v1/accounts/acme', { low: 2_000_000 });
    t.equal(low.status, 200, low.text);
    t.equal(low.body.low, 2_000_000);
    for (const body of [{ low: -1 }, { low: 1.5 }, {}, { low: 5, name: 'x' }]) {
      t.equal((await c.admin('PATCH', '/_admin/v1/accounts/acme', body)).status, 400, JSON.stringify(body));
    }
    t.equal((await c.admin('PATCH', '/_admin/v1/accounts/acme', { low: null })).body.low, null, 'cleared');
  });
});

t.test('with money.approvals 2 a refill rule waits for a second operator', async (t) => {
  const team = await startTeamControl(t, { alice: ['read', 'money'], bob: ['read', 'money'] });
  await team.control.admin('POST', '/_admin/v1/accounts', { name: 'acme' });
  const asked = await team.control.admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 7, every: 'day' }, team.tokens.alice);
  t.equal(asked.status, 202, asked.text);
  t.match(asked.body, { action: 'accounts.refill.set', status: 'pending', detail: { amount: 7, every: 'day' } });
  t.equal((await team.control.admin('GET', '/_admin/v1/accounts/acme')).body.refill, null, 'not set yet');
  const approved = await team.control.admin('POST', `/_admin/v1/approvals/${asked.body.id as string}/approve`, {}, team.tokens.bob);
  t.equal(approved.status, 200, approved.text);
  t.match(approved.body.result, { refill: { amount: 7, set_by: 'alice' }, refilled: { amount: 7 }, balance: 7 });
});

t.test('ledger verify catches a refill that is not its period recorded once', async (t) => {
  forEachStore(t, async (t, kind) => {
    const corruptions: [string, string, RegExp][] = [
      [
        "the period's record deleted",
        `DELETE FROM account_refills`,
        /refill transfer \d+ \(refill:acc_r:2026-11-29\) is not its period's recorded refill/,
      ],
      [
        'the amount recorded edited',
        `UPDATE account_refills SET amount = amount + 1`,
        /refill transfer \d+ \(refill:acc_r:2026-11-29\) is not its period's recorded refill/,
      ],
      [
        'the reference edited',
        `UPDATE ledger_transfers SET reference = 'refill:acc_r:2026-11-28' WHERE kind = 'refill'`,
        /refill transfer \d+ \(refill:acc_r:2026-11-28\) is not/,
      ],
      [
        'a record naming a transfer of another kind',
        `UPDATE account_refills SET transfer_id = (SELECT id FROM ledger_transfers WHERE kind = 'deposit')`,
        /refill transfer \d+ .* is not|the refill of 2026-11-29 names no refill transfer/,
      ],
    ];
    for (const [label, sql, pattern] of corruptions) {
      await t.test(label, async (t) => {
        const { store, exec } = await openWithSql(t, kind);
        const at = Date.parse('2026-11-29T10:00:00Z');
        const by = { actor: 'test', now: at };
        await store.mutate(by, { action: 'accounts.add' }, async (tx) => {
          await tx.accounts.insert({ id: 'acc_r', name: 'r', low: null, created_at: at, created_by: 'test' });
          await tx.accounts.setRefill('acc_r', { amount: 900, every: 'day', day: null }, 'test');
          await tx.ledger.deposit('acc_r', 100, 'dep-1', at, 'test');
        });
        const made = await store.mutate(by, { action: 'accounts.refilled' }, (tx) => tx.accounts.refill('acc_r', at));
        t.match(made.result, { period: '2026-11-29', target: 900, amount: 800, created: true });
        t.equal(await store.ledger.balance('account:acc_r'), 900);
        t.ok((await store.ledger.verify()).ok, `${label}: fine before`);
        await exec(sql);
        const result = await store.ledger.verify();
        t.notOk(result.ok, `${label}: caught`);
        t.match(result.violation, pattern, `${label}: ${result.violation}`);
      });
    }
  });
});
