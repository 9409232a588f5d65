/**
 * `svcctl lps …` against a real control: providers added, deposits into their positions
 * (printed and as `--json`, a replay moving nothing, a used reference refused), the positions
 * and the pool's capital listed and shown, withdrawals requested by amount and `--all`, listed
 * (`--pending`, `--provider`), cancelled, and one paid once its notice has passed; bad input
 * refused before anything is sent (exit 2), control's refusals (unknown provider, over the
 * position, a withdrawal not pending) exit 1 naming what is wrong; `pool show` prints the
 * capital block. With `money.approvals: 2` the changes print the pending request and a second
 * operator's `approvals approve` prints what the command prints; a `read` operator sees no
 * provider (`money` scope).
 */
import t from 'tap';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { startTeamControl } from '../fixtures/team';

const HOUR_MS = 3_600_000;

t.test('lps add, deposit, list, show, withdraw, withdrawals, cancel; pool show', async (t) => {
  let clock = Date.parse('2026-03-02T10:00:00Z');
  const control = await startTestControl(t, { now: () => clock });
  const cli = (...args: string[]) => runCli(args, { control });

  const none = await cli('lps', 'list', '--json');
  t.equal(none.code, 0, none.stderr);
  t.match(none.json(), { providers: [{ id: 'operator', name: 'operator', shares: 0 }], pool: { capital: 0, shares: 0, providers: 0 } });

  // Adding.
  const alice = await cli('lps', 'add', 'alice');
  t.equal(alice.code, 0, alice.stderr);
  t.match(
    alice.stdout,
    /^Added liquidity provider alice \(lp_\w+\)\. Deposit into its position with: svcctl lps deposit alice AMOUNT --reference REF$/m,
  );
  t.match(alice.stdout, /^shares: +0$/m);
  const bob = await cli('lps', 'add', 'bob', '--json');
  t.equal(bob.code, 0, bob.stderr);
  t.match(bob.json(), {
    id: /^lp_/,
    name: 'bob',
    shares: 0,
    value: 0,
    deposited: 0,
    withdrawn: 0,
    gain: 0,
    pending: 0,
    created_by: 'root',
  });
  const taken = await cli('lps', 'add', 'alice');
  t.equal(taken.code, 1, 'a name taken');
  t.match(taken.stderr, /alice exists.*svc_conflict/);
  for (const name of ['lp_x', 'bad name', '.x']) {
    const bad = await cli('lps', 'add', name);
    t.equal(bad.code, 2, `${name}: a usage error`);
    t.match(bad.stderr, /NAME must be/);
  }

  // Deposits.
  const made = await cli('lps', 'deposit', 'alice', '10.5', '--reference', 'LP-1');
  t.equal(made.code, 0, made.stderr);
  t.match(
    made.stdout,
    /^Deposited 10\.5 \(10500000 micro\) into alice's position \(transfer \d+, reference LP-1\): 10500000 shares minted\.$/m,
  );
  t.match(made.stdout, /^value: +10\.5 \(10500000 micro\)$/m);
  const again = await cli('lps', 'deposit', 'alice', '10500000', '--reference', 'LP-1', '--json');
  t.equal(again.code, 0, again.stderr);
  t.match(
    again.json(),
    { amount: 10_500_000, reference: 'LP-1', shares: 10_500_000, created: false, position: { name: 'alice', shares: 10_500_000 } },
    'the replay, as JSON',
  );
  const replay = await cli('lps', 'deposit', 'alice', '10.5', '--reference', 'LP-1');
  t.match(replay.stdout, /^Reference LP-1 was deposited before \(transfer \d+, 10\.5 \(10500000 micro\)\): nothing moved\.$/m);
  const used = await cli('lps', 'deposit', 'bob', '10.5', '--reference', 'LP-1');
  t.equal(used.code, 1, 'the reference for another provider');
  t.match(used.stderr, /svc_conflict/);
  for (const amount of ['0', '-1', '1.0000001', 'ten']) {
    const bad = await cli('lps', 'deposit', 'alice', amount, '--reference', 'LP-2');
    t.equal(bad.code, 2, `${amount}: a usage error`);
    t.match(bad.stderr, /AMOUNT/);
  }
  t.equal((await cli('lps', 'deposit', 'alice', '1', '--reference', ' ')).code, 2, 'an empty reference');
  const nobody = await cli('lps', 'deposit', 'nobody', '1', '--reference', 'LP-3');
  t.equal(nobody.code, 1, 'an unknown provider');
  t.match(nobody.stderr, /no liquidity provider named nobody/);
  t.equal((await cli('lps', 'deposit', 'bob', '4.0', '--reference', 'LP-4', '--json')).json().shares, 4_000_000);

  // The positions and the pool.
  const list = await cli('lps', 'list');
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^NAME +ID +SHARES +VALUE +DEPOSITED +WITHDRAWN +GAIN +PENDING$/m);
  t.match(list.stdout, /^alice +lp_\w+ +10500000 +10\.5 +10\.5 +0 +0 +0$/m);
  t.match(list.stdout, /^bob +lp_\w+ +4000000 +4 +4 +0 +0 +0$/m);
  t.match(list.stdout, /^operator +operator +0 +0 +0 +0 +0 +0$/m);
  t.match(list.stdout, /^Pool: capital 14\.5, exposure 0, locked 0, free 14\.5; value\/share 1; 0 pending withdrawal\(s\)\.$/m);
  const listed = (await cli('lps', 'list', '--json')).json();
  t.same(
    listed.providers.map((p: { name: string }) => p.name),
    ['alice', 'bob', 'operator'],
    'by name',
  );
  t.same(listed.pool, {
    capital: 14_500_000,
    exposure: 0,
    locked: 0,
    free: 14_500_000,
    shares: 14_500_000,
    value_per_share: 1,
    providers: 2,
    pending_withdrawals: 0,
    lock_ratio: 1,
    notice_h: 72,
  });
  const shown = await cli('lps', 'show', 'alice');
  t.equal(shown.code, 0, shown.stderr);
  t.match(shown.stdout, /^name: +alice$/m);
  t.match(shown.stdout, /^deposited: +10\.5 \(10500000 micro\)$/m);
  t.match(shown.stdout, /^No withdrawals\.$/m);
  t.match(shown.stdout, /^Share events:$/m);
  t.match(shown.stdout, /^\d+ +deposit +\+10500000 +10\.5 +0 +0 +\d+ +- +2026-03-02T10:00:00\.000Z$/m);
  const aliceId = (await cli('lps', 'show', 'alice', '--json')).json().id as string;
  t.match((await cli('lps', 'show', aliceId, '--json')).json(), {
    name: 'alice',
    withdrawals: [],
    events: [{ kind: 'deposit', shares: 10_500_000, amount: 10_500_000, withdrawal_id: null }],
  });
  const unknown = await cli('lps', 'show', 'nobody');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /no liquidity provider named nobody.*svc_not_found/);

  // Withdrawals.
  const asked = await cli('lps', 'withdraw', 'alice', '2.5');
  t.equal(asked.code, 0, asked.stderr);
  t.match(
    asked.stdout,
    /^Withdrawal (\d+) requested for alice: 2\.5 \(2500000 micro\), paid from free capital from 2026-03-05T10:00:00\.000Z\.$/m,
  );
  const aliceWithdrawal = Number(/^Withdrawal (\d+)/m.exec(asked.stdout)![1]);
  const usage: [string[], RegExp][] = [
    [['alice', '1', '--all'], /give either AMOUNT or --all, not both/],
    [['alice'], /missing AMOUNT \(or use --all\)/],
    [['alice', '0'], /AMOUNT must be at least 1 micro-unit/],
    [['alice', '1.2.3'], /AMOUNT must be/],
  ];
  for (const [args, message] of usage) {
    const res = await cli('lps', 'withdraw', ...args);
    t.equal(res.code, 2, args.join(' '));
    t.match(res.stderr, message);
  }
  const over = await cli('lps', 'withdraw', 'alice', '8.000001');
  t.equal(over.code, 1, 'over the position less what is asked for already');
  t.match(over.stderr, /alice cannot withdraw 8000001: its position is worth 10500000, 2500000 of it asked for already.*svc_conflict/);
  t.equal((await cli('lps', 'withdraw', 'nobody', '1')).code, 1, 'an unknown provider');
  const all = await cli('lps', 'withdraw', 'bob', '--all', '--json');
  t.equal(all.code, 0, all.stderr);
  t.match(all.json(), { id: Number, provider: 'bob', amount: null, paid: 0, status: 'pending', requested_by: 'root', closed_at: null });
  const bobWithdrawal = all.json().id as number;

  const pending = await cli('lps', 'withdrawals', '--pending');
  t.equal(pending.code, 0, pending.stderr);
  t.match(pending.stdout, /^ID +PROVIDER +STATUS +AMOUNT +PAID +REQUESTED +DUE +CLOSED$/m);
  t.match(
    pending.stdout,
    new RegExp(`^${aliceWithdrawal} +alice +pending +2\\.5 +0 +2026-03-02T10:00:00\\.000Z +2026-03-05T10:00:00\\.000Z +-$`, 'm'),
  );
  t.match(pending.stdout, new RegExp(`^${bobWithdrawal} +bob +pending +all +0 `, 'm'));
  t.match(pending.stdout, /^Pool: capital 14\.5, .*; 2 pending withdrawal\(s\)\.$/m);
  const mine = await cli('lps', 'withdrawals', '--provider', 'alice', '--json');
  t.equal(mine.code, 0, mine.stderr);
  t.same(
    mine.json().withdrawals.map((w: { id: number }) => w.id),
    [aliceWithdrawal],
    "--provider: alice's only",
  );
  t.match(mine.json().pool, { capital: 14_500_000, pending_withdrawals: 2 });
  const noOne = await cli('lps', 'withdrawals', '--provider', 'nobody');
  t.equal(noOne.code, 1, 'an unknown provider');
  t.match(noOne.stderr, /no liquidity provider named nobody/);
  t.match((await cli('lps', 'list', '--json')).json().providers[1], { name: 'bob', pending: 4_000_000 }, 'bob asks for its whole value');

  const cancelled = await cli('lps', 'cancel', String(bobWithdrawal));
  t.equal(cancelled.code, 0, cancelled.stderr);
  t.match(cancelled.stdout, new RegExp(`^Cancelled withdrawal ${bobWithdrawal} of bob\\.$`, 'm'));
  t.match(cancelled.stdout, /^status: +cancelled$/m);
  t.match(cancelled.stdout, /^closed: +\S+ by root$/m);
  const twice = await cli('lps', 'cancel', String(bobWithdrawal), '--json');
  t.equal(twice.code, 1, 'a cancelled withdrawal');
  t.match(twice.stderr, new RegExp(`withdrawal ${bobWithdrawal} is cancelled, not pending.*svc_conflict`));
  t.equal((await cli('lps', 'cancel', '999999')).code, 1, 'an unknown withdrawal');
  for (const id of ['0', 'abc', '-1']) t.equal((await cli('lps', 'cancel', id)).code, 2, `${id}: not a withdrawal id`);

  // Paid once its notice has passed; a paid withdrawal is not cancelled.
  clock += 73 * HOUR_MS;
  const paid = await control.handle.withdrawals.runOnce();
  t.equal(paid.length, 1, 'one payment');
  const done = (await cli('lps', 'withdrawals', '--json')).json();
  t.match(done.withdrawals, [
    { id: aliceWithdrawal, status: 'paid', paid: 2_500_000, closed_by: 'withdrawals' },
    { id: bobWithdrawal, status: 'cancelled' },
  ]);
  t.match((await cli('lps', 'withdrawals', '--pending')).stdout, /^No pending withdrawals\.$/m);
  const late = await cli('lps', 'cancel', String(aliceWithdrawal));
  t.equal(late.code, 1, 'a paid withdrawal');
  t.match(late.stderr, new RegExp(`withdrawal ${aliceWithdrawal} is paid, not pending`));
  t.match((await cli('lps', 'show', 'alice', '--json')).json(), { shares: 8_000_000, value: 8_000_000, withdrawn: 2_500_000, gain: 0 });

  // pool show: the ledger's figures and the capital block.
  const pool = await cli('pool', 'show');
  t.equal(pool.code, 0, pool.stderr);
  const lines: RegExp[] = [
    /^pool: +12 \(12000000 micro\)$/m,
    /^funded: +14\.5 \(14500000 micro\)$/m,
    /^withdrawn: +2\.5 \(2500000 micro\) \(paid to liquidity providers\)$/m,
    /^capital: +12 \(12000000 micro\)$/m,
    /^exposure: +0 \(0 micro\)$/m,
    /^locked: +0 \(0 micro\)$/m,
    /^free: +12 \(12000000 micro\)$/m,
    /^shares: +12000000$/m,
    /^value per share: +1$/m,
    /^providers: +2$/m,
    /^withdrawals: +0 pending$/m,
    /^lock ratio: +1$/m,
    /^notice: +72 h$/m,
  ];
  for (const line of lines) t.match(pool.stdout, line);
  t.match((await cli('pool', 'show', '--json')).json(), {
    pool: 12_000_000,
    withdrawn: 2_500_000,
    capital: { capital: 12_000_000, shares: 12_000_000, providers: 2, pending_withdrawals: 0, notice_h: 72 },
  });
});

t.test('with money.approvals: 2 the lps changes wait for a second operator; the reads need money', async (t) => {
  const { control, tokens } = await startTeamControl(t, { cleo: ['read', 'money'], dan: ['read', 'money'], vic: ['read'] });
  const as = (name: string, ...args: string[]) => runCli(args, { control, token: tokens[name]! });

  const asked = await as('cleo', 'lps', 'add', 'carol');
  t.equal(asked.code, 0, asked.stderr);
  t.match(asked.stdout, /^Waiting for a second operator: nothing happened yet\.$/m);
  t.match(asked.stdout, /^Request (apr_\w{12}) \(lps\.add on carol\) by cleo expires at \S+\.$/m);
  const id = /apr_\w{12}/.exec(asked.stdout)![0];
  t.equal((await as('cleo', 'lps', 'show', 'carol')).code, 1, 'not added yet');
  const approved = await as('dan', 'approvals', 'approve', id);
  t.equal(approved.code, 0, approved.stderr);
  t.match(approved.stdout, new RegExp(`^Approved ${id}: lps\\.add on carol, asked by cleo, done\\.$`, 'm'));
  t.match(approved.stdout, /^Added liquidity provider carol \(lp_\w+\)\./m, 'then what lps add itself prints');

  for (const args of [
    ['lps', 'deposit', 'carol', '5.0', '--reference', 'LP-9'],
    ['lps', 'withdraw', 'operator', '--all'],
    ['lps', 'cancel', '1'],
  ]) {
    const waiting = await as('cleo', ...args, '--json');
    t.equal(waiting.code, 0, waiting.stderr);
    t.match(waiting.json(), { id: /^apr_/, status: 'pending', action: /^lps\./, requested_by: 'cleo' }, args.join(' '));
  }
  const deposit = (await as('dan', 'approvals', 'list', '--status', 'pending', '--json'))
    .json()
    .approvals.find((a: { action: string }) => a.action === 'lps.deposit').id as string;
  const deposited = await as('dan', 'approvals', 'approve', deposit);
  t.equal(deposited.code, 0, deposited.stderr);
  t.match(
    deposited.stdout,
    /^Deposited 5 \(5000000 micro\) into carol's position \(transfer \d+, reference LP-9\): 5000000 shares minted\.$/m,
  );

  const denied = await as('vic', 'lps', 'list');
  t.equal(denied.code, 1, 'a read operator');
  t.match(denied.stderr, /svc_forbidden_scope/);
  t.equal((await as('vic', 'lps', 'withdrawals')).code, 1);
  t.equal((await as('vic', 'pool', 'show')).code, 0, 'pool show stays read');
});
