/**
 * `svcctl accounts deposit`, `accounts wallet`, `accounts refill` and `accounts low` against a
 * real control: a deposit printed and as `--json`, its replay (nothing moved), a used reference
 * refused, amounts parsed as units or micro-units and bad ones refused before anything is sent;
 * the account's wallet set and removed; a refill rule set (the current period refilled), shown
 * and cleared, bad rules refused; the low-balance threshold set and cleared. With
 * `money.approvals: 2`, approving a refill rule set or cleared prints what `accounts refill` prints.
 */
import t from 'tap';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { startTeamControl } from '../fixtures/team';

const WALLET = 'So11111111111111111111111111111111111111112';

t.test('accounts deposit and accounts wallet', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });
  t.equal((await cli('accounts', 'add', 'acme')).code, 0);

  const made = await cli('accounts', 'deposit', 'acme', '25.5', '--reference', 'INV-7');
  t.equal(made.code, 0, made.stderr);
  t.match(made.stdout, /^Deposited 25\.5 \(25500000 micro\) into acc_\w{12} \(transfer \d+, reference INV-7\)\.$/m);
  t.match(made.stdout, /^Balance: 25\.5 \(25500000 micro\)$/m);

  const again = await cli('accounts', 'deposit', 'acme', '25500000', '--reference', 'INV-7', '--json');
  t.equal(again.code, 0, again.stderr);
  t.match(again.json(), { amount: 25_500_000, reference: 'INV-7', balance: 25_500_000, created: false }, 'the replay, as JSON');
  const human = await cli('accounts', 'deposit', 'acme', '25.5', '--reference', 'INV-7');
  t.match(human.stdout, /^Reference INV-7 was deposited before \(transfer \d+, 25\.5 \(25500000 micro\)\): nothing moved\.$/m);

  const used = await cli('accounts', 'deposit', 'acme', '1', '--reference', 'INV-7');
  t.equal(used.code, 1, 'another amount under the reference');
  t.match(used.stderr, /svc_conflict/);
  for (const amount of ['0', '1.0000001', 'ten']) {
    const bad = await cli('accounts', 'deposit', 'acme', amount, '--reference', 'INV-8');
    t.equal(bad.code, 2, `${amount} is a usage error`);
    t.match(bad.stderr, /AMOUNT/);
  }
  t.equal((await cli('accounts', 'deposit', 'acme', '1', '--reference', ' ')).code, 2, 'an empty reference');
  t.equal((await cli('accounts', 'deposit', 'nobody', '1', '--reference', 'INV-9')).code, 1, 'an unknown account');
  t.equal((await cli('accounts', 'show', 'acme', '--json')).json().balance, 25_500_000, 'only the first deposit moved money');

  const attached = await cli('accounts', 'wallet', 'acme', WALLET);
  t.equal(attached.code, 0, attached.stderr);
  t.match(attached.stdout, new RegExp(`^acme pays out to ${WALLET}\\.$`, 'm'));
  const detached = await cli('accounts', 'wallet', 'acme', '--detach', '--json');
  t.match(detached.json(), { name: 'acme', wallet: null });
  t.equal((await cli('accounts', 'wallet', 'acme', 'nope')).code, 2, 'not a wallet address');
});

t.test('accounts refill and accounts low', async (t) => {
  const control = await startTestControl(t, { now: () => Date.parse('2026-11-29T10:00:00Z') });
  const cli = (...args: string[]) => runCli(args, { control });
  t.equal((await cli('accounts', 'add', 'acme')).code, 0);

  const set = await cli('accounts', 'refill', 'acme', '5.0', '--every', 'month', '--day', '31');
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /^acme is refilled up to 5 \(5000000 micro\) every month on day 31 \(UTC\); next at 2026-11-30T00:00:00\.000Z\.$/m);
  t.match(set.stdout, /^This period \(2026-10\): refilled 5 \(5000000 micro\) \(transfer \d+\)\.$/m);
  const shown = await cli('accounts', 'show', 'acme');
  t.match(shown.stdout, /^refill: +up to 5 \(5000000 micro\) every month on day 31$/m);
  t.match(shown.stdout, /^next refill: 2026-11-30T00:00:00\.000Z \(set by root\)$/m);
  const json = await cli('accounts', 'refill', 'acme', '5.0', '--every', 'day', '--json');
  t.match(
    json.json(),
    { refill: { amount: 5_000_000, every: 'day' }, refilled: { period: '2026-11-29', amount: 0 } },
    'at the amount already: nothing moved',
  );

  const bad: [string[], RegExp][] = [
    [['5'], /--every must be day or month/],
    [['5', '--every', 'week'], /--every must be day or month/],
    [['5', '--every', 'day', '--day', '3'], /--day is only for --every month/],
    [['5', '--every', 'month', '--day', '0'], /--day must be a day of the month/],
    [['5', '--every', 'month', '--day', '32'], /--day must be a day of the month/],
    [['0', '--every', 'day'], /AMOUNT/],
    [['--every', 'day'], /missing AMOUNT/],
    [['5', '--never'], /not both/],
  ];
  for (const [args, message] of bad) {
    const res = await cli('accounts', 'refill', 'acme', ...args);
    t.equal(res.code, 2, args.join(' '));
    t.match(res.stderr, message);
  }
  const never = await cli('accounts', 'refill', 'acme', '--never');
  t.equal(never.code, 0, never.stderr);
  t.match(never.stdout, /^acme is not refilled any more\.$/m);
  t.equal((await cli('accounts', 'show', 'acme', '--json')).json().refill, null);

  const low = await cli('accounts', 'low', 'acme', '2.5');
  t.match(low.stdout, /^acme is low below 2\.5 \(2500000 micro\)\.$/m);
  t.equal((await cli('accounts', 'low', 'acme', '--clear', '--json')).json().low, null);
  t.equal((await cli('accounts', 'low', 'acme')).code, 2, 'neither AMOUNT nor --clear');
  t.equal((await cli('accounts', 'low', 'acme', '1', '--clear')).code, 2, 'both');
});

t.test('approvals approve prints an approved refill rule as accounts refill does', async (t) => {
  const now = () => Date.parse('2026-11-29T10:00:00Z');
  const { control, tokens } = await startTeamControl(t, { cleo: ['read', 'keys', 'money'], dan: ['read', 'money'] }, { now });
  const as = (name: string, ...args: string[]) => runCli(args, { control, token: tokens[name]! });
  t.equal((await as('cleo', 'accounts', 'add', 'acme')).code, 0);
  const approve = async (args: string[]) => {
    const asked = await as('cleo', 'accounts', 'refill', 'acme', ...args);
    t.equal(asked.code, 0, asked.stderr);
    const approved = await as('dan', 'approvals', 'approve', /apr_\w{12}/.exec(asked.stdout)![0]);
    t.equal(approved.code, 0, approved.stderr);
    return approved.stdout;
  };
  t.match(await approve(['5.0', '--every', 'day']), /^acme is refilled up to 5 \(5000000 micro\) every day \(UTC\); next at \S+\.$/m);
  t.match(await approve(['--never']), /^acme is not refilled any more\.$/m);
});
