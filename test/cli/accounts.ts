/**
 * `svcctl accounts add|list|show` and `svcctl keys issue --account`, in-process against an
 * in-process control: the human output and `--json` (the admin API's own shapes), pages
 * followed whole, and the usage, conflict and not-found errors with their exit codes.
 */
import t from 'tap';
import { AccountChange, AccountList, AccountView } from '../../protocol/accounts';
import { IssuedKey } from '../../protocol/admin';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';

t.test('accounts add, list, show; keys issued into one', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });

  const added = await cli('accounts', 'add', 'acme', '--low', '2.5', '--json');
  t.equal(added.code, 0, added.stderr);
  const account = AccountChange.parse(added.json());
  t.match(account, { name: 'acme', low: 2_500_000, balance: 0, keys: 0 }, '--low takes units');

  const human = await cli('accounts', 'add', 'beta-team');
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /Added account beta-team \(acc_\w+\)\. Issue keys into it with: svcctl keys issue --account beta-team/);
  t.match(human.stdout, /balance:\s+0 \(0 micro\)/);

  const issued = await cli('keys', 'issue', '--account', 'acme', '--json');
  t.equal(issued.code, 0, issued.stderr);
  t.equal(IssuedKey.parse(issued.json()).account_id, account.id);
  const own = await cli('keys', 'issue', '--name', 'solo');
  t.match(own.stdout, /account:\s+acc_\w+/, 'a key shows its account');

  const shown = await cli('accounts', 'show', 'acme', '--json');
  t.equal(AccountView.parse(shown.json()).keys, 1);
  const shownHuman = await cli('accounts', 'show', account.id);
  t.match(shownHuman.stdout, /name:\s+acme\n/);
  t.match(shownHuman.stdout, /low below:\s+2\.5 \(2500000 micro\)/);
  t.match(shownHuman.stdout, /keys:\s+1\n/);

  const all = await cli('accounts', 'list', '--json');
  const names = AccountList.parse(all.json()).accounts.map((a) => a.name);
  t.same(names.slice(0, 2), ['acme', 'beta-team'], 'by name; the solo key’s own account after them');
  t.equal(names.length, 3);
  const page = await cli('accounts', 'list', '--limit', '1');
  t.match(page.stdout, /NAME\s+ID\s+BALANCE\s+KEYS/);
  t.match(page.stdout, /next page: --cursor \S+/);
  const table = await cli('accounts', 'list');
  t.match(table.stdout, /acme\s+acc_\w+\s+0 \(0 micro\)\s+1/);

  const taken = await cli('accounts', 'add', 'acme');
  t.equal(taken.code, 1, 'a name taken is a failure');
  t.match(taken.stderr, /an account named acme exists/);
  const badName = await cli('accounts', 'add', 'no spaces');
  t.equal(badName.code, 2, 'a bad name is a usage error');
  t.match(badName.stderr, /NAME must be 1 to 64 of/);
  const badLow = await cli('accounts', 'add', 'x', '--low', '0.0000001');
  t.equal(badLow.code, 2);
  t.match(badLow.stderr, /--low has more than 6 decimals/);
  const unknown = await cli('accounts', 'show', 'nobody');
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /no account named nobody/);
  const intoNothing = await cli('keys', 'issue', '--account', 'nobody');
  t.equal(intoNothing.code, 2, "control's 400: a bad value");
  t.match(intoNothing.stderr, /no account named nobody/);
});
