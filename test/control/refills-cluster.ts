/**
 * Refills with two controls on one PostgreSQL database and a moved clock: both controls' loops
 * race on every period (each also runs a pass when it starts), one of them is restarted in the
 * middle, and every account is still refilled exactly once per period, by one control or the
 * other, with `ledger verify` passing. One control and the period rules: test/control/refills.ts.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { join } from 'node:path';
import { manualClock, startTestControl, type AdminResponse, type TestControl } from '../fixtures/control';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';

const DAY = 86_400_000;
const ACCOUNTS = 6;
const DAYS = 5;
/** Account i's payout wallet: a lowercase EVM address of its own. */
const walletOf = (i: number): string => `0x${(i + 1).toString(16).repeat(40)}`;

if (!skipWithoutPostgres(t)) {
  t.test('two controls and a restart: each account refilled once per period', async (t) => {
    const clock = manualClock(Date.parse('2026-11-29T10:00:00Z'));
    const root = t.testdir();
    const flags = { databaseUrl: await createDatabase(t) };
    const start = (dir: string): Promise<TestControl> => startTestControl(t, { dataDir: join(root, dir), flags, now: clock.now });
    const a = await start('a');
    let b = await start('b');
    // The second control writes no token files: it accepts the first's (control/tokens.ts).
    const via =
      (c: () => TestControl) =>
      (method: string, path: string, body?: unknown): Promise<AdminResponse> =>
        c().admin(method, path, body, a.adminToken);
    const onA = via(() => a);
    const onB = via(() => b);

    const ids: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const added = await a.admin('POST', '/_admin/v1/accounts', { name: `team-${i}` });
      ids.push(added.body.id as string);
      t.equal((await onB('PUT', `/_admin/v1/accounts/team-${i}/wallet`, { wallet: walletOf(i) })).status, 200);
      const set = await (i % 2 ? onA : onB)('PUT', `/_admin/v1/accounts/team-${i}/refill`, { amount: 1_000, every: 'day' });
      t.equal(set.status, 200, set.text);
    }

    for (let day = 1; day < DAYS; day++) {
      clock.advance(DAY);
      // Each account spends part of its balance, so each period's refill moves money.
      for (let i = 0; i < ACCOUNTS; i++) {
        const paid = await a.admin('POST', '/_admin/v1/payouts/mark-paid', {
          wallet: walletOf(i),
          amount: 100 * (i + 1),
          reference: `d${day}-${i}`,
        });
        t.equal(paid.status, 201, paid.text);
      }
      if (day === 2) {
        await b.close();
        b = await start('b'); // its first pass races the loops below
      }
      await Promise.all([a.handle.refills.runOnce(), b.handle.refills.runOnce(), a.handle.refills.runOnce(), b.handle.refills.runOnce()]);
    }

    const audit = (await a.admin('GET', '/_admin/v1/audit?action=accounts.refilled&limit=1000')).body.entries as {
      target: string;
      detail: { period: string; amount: number };
    }[];
    for (const [i, id] of ids.entries()) {
      const made = audit.filter((e) => e.target === id);
      t.same(
        made.map((e) => e.detail.period).sort(),
        ['2026-11-29', '2026-11-30', '2026-12-01', '2026-12-02', '2026-12-03'],
        `${id}: one refill per period`,
      );
      t.same(
        made.map((e) => e.detail.amount),
        [...Array.from({ length: DAYS - 1 }, () => 100 * (i + 1)), 1_000],
        `${id}: each brought it back up to the amount (newest first)`,
      );
      t.equal((await onB('GET', `/_admin/v1/accounts/${id}`)).body.balance, 1_000);
    }
    const verify = await onB('GET', '/_admin/v1/ledger/verify');
    t.equal(verify.body.violation, null, JSON.stringify(verify.body));
  });
}
