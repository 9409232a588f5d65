/**
 * `svcctl accounts deposit` and `accounts wallet` against a real control: a deposit printed and
 * as `--json`, its replay (nothing moved), a used reference refused, amounts parsed as units or
 * micro-units and bad ones refused before anything is sent; the account's wallet set and removed.
 */
import t from 'tap';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';

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
