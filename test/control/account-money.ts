/**
 * An account's money through the admin API, on both stores: deposits (external → account, once
 * per reference: a replay answers the first and moves nothing, another amount is 409, bad input
 * 400 naming the field, each audited with the operator), the account's wallet (set directly, or
 * through a key of the account; a key issued with a wallet into a shared account is refused), and
 * with `money.approvals: 2` a deposit waits for a second money operator.
 */
import t from 'tap';
import { startTestControl, type TestControl } from '../fixtures/control';
import { startTeamControl } from '../fixtures/team';
import { forEachStore } from '../fixtures/stores';

const WALLET = '0x52908400098527886E0F7030069857D2E4169EE7';
const SOL = 'So11111111111111111111111111111111111111112';

const balanceOf = async (c: TestControl, account: string): Promise<number> =>
  (await c.admin('GET', `/_admin/v1/accounts/${account}`)).body.balance as number;

forEachStore(t, (t, kind) => {
  t.test('a deposit moves money once per reference', async (t) => {
    const c = await startTestControl(t, { store: kind });
    const acme = (await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' })).body.id as string;
    const first = await c.admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 25_000_000, reference: '  INV-7 ' });
    t.equal(first.status, 201, first.text);
    t.match(first.body, { account_id: acme, amount: 25_000_000, reference: 'INV-7', balance: 25_000_000, created: true });
    t.type(first.body.transfer_id, 'number');
    t.equal(await balanceOf(c, 'acme'), 25_000_000, 'the account holds it');

    const again = await c.admin('POST', `/_admin/v1/accounts/${acme}/deposit`, { amount: 25_000_000, reference: 'INV-7' });
    t.equal(again.status, 200, 'the same reference and amount again');
    t.same(again.body, { ...first.body, created: false }, 'answers the first deposit');
    const other = await c.admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 1, reference: 'INV-7' });
    t.equal(other.status, 409, 'another amount under a used reference');
    t.match(other.body, { code: 'svc_conflict', reason: 'reference_used' });
    const beta = await c.admin('POST', '/_admin/v1/accounts', { name: 'beta' });
    const elsewhere = await c.admin('POST', '/_admin/v1/accounts/beta/deposit', { amount: 25_000_000, reference: 'INV-7' });
    t.equal(elsewhere.status, 409, 'the same reference into another account');
    t.equal(elsewhere.body.reason, 'reference_used');
    t.equal(await balanceOf(c, 'acme'), 25_000_000, 'the replay and the conflicts moved nothing');
    t.equal(await balanceOf(c, beta.body.id as string), 0);

    const bad: [unknown, string][] = [
      [{ amount: 0, reference: 'x' }, 'amount'],
      [{ amount: -5, reference: 'x' }, 'amount'],
      [{ amount: 1.5, reference: 'x' }, 'amount'],
      [{ amount: '5', reference: 'x' }, 'amount'],
      [{ reference: 'x' }, 'amount'],
      [{ amount: 5, reference: '   ' }, 'reference'],
      [{ amount: 5, reference: 'x'.repeat(201) }, 'reference'],
      [{ amount: 5, reference: 'a\u0000b' }, 'reference'],
      [{ amount: 5 }, 'reference'],
      [{ amount: 5, reference: 'x', note: 'extra' }, 'note'],
    ];
    for (const [body, field] of bad) {
      const res = await c.admin('POST', '/_admin/v1/accounts/acme/deposit', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.code, 'svc_bad_request');
      t.ok(
        (res.body.errors as { field: string }[]).some((e) => e.field === field || e.field === ''),
        `names ${field}: ${JSON.stringify(res.body.errors)}`,
      );
    }
    const unknown = await c.admin('POST', '/_admin/v1/accounts/nobody/deposit', { amount: 5, reference: 'x' });
    t.equal(unknown.status, 404);
    t.equal(unknown.body.code, 'svc_not_found');
    t.equal(await balanceOf(c, 'acme'), 25_000_000, 'bad input moved nothing');

    const audit = (await c.admin('GET', '/_admin/v1/audit?action=accounts.deposit')).body.entries as Record<string, unknown>[];
    t.match(
      audit,
      [
        { actor: 'root', target: acme, detail: { amount: 25_000_000, reference: 'INV-7', created: false } },
        {
          actor: 'root',
          target: acme,
          detail: { amount: 25_000_000, reference: 'INV-7', created: true, transfer_id: first.body.transfer_id },
        },
      ],
      'each deposit audited with the operator, newest first; the conflicts and bad input left none',
    );
    t.equal(audit.length, 2);
    const verified = await c.admin('GET', '/_admin/v1/ledger/verify');
    t.ok(verified.body.ok, verified.body.violation ?? '');
    t.ok((verified.body.checks as string[]).includes('every deposit reference is used once'));
  });

  t.test("the wallet is the account's, through the account or a key of it", async (t) => {
    const c = await startTestControl(t, { store: kind });
    const acme = (await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' })).body.id as string;
    const a = (await c.admin('POST', '/_admin/v1/keys', { name: 'a', account: 'acme' })).body.id as string;
    const b = (await c.admin('POST', '/_admin/v1/keys', { name: 'b', account: 'acme' })).body.id as string;
    const set = await c.admin('PUT', '/_admin/v1/accounts/acme/wallet', { wallet: WALLET });
    t.equal(set.status, 200, set.text);
    t.match(set.body, { id: acme, wallet: WALLET, version: Number });
    for (const key of [a, b]) t.equal((await c.admin('GET', `/_admin/v1/keys/${key}`)).body.wallet, WALLET, 'each key shows it');

    const viaKey = await c.admin('PUT', `/_admin/v1/keys/${a}/wallet`, { wallet: SOL });
    t.equal(viaKey.status, 200);
    t.match(viaKey.body, { id: a, wallet: SOL, account_id: acme });
    t.equal((await c.admin('GET', '/_admin/v1/accounts/acme')).body.wallet, SOL, "keys wallet sets the key's account's");
    t.equal((await c.admin('GET', `/_admin/v1/keys/${b}`)).body.wallet, SOL, 'the other key of the account shows it too');
    const later = await c.admin('POST', '/_admin/v1/keys', { name: 'c', account: 'acme' });
    t.equal(later.body.wallet, SOL, 'a key issued into the account later shows it');

    const shared = await c.admin('POST', '/_admin/v1/keys', { name: 'd', account: 'acme', wallet: WALLET });
    t.equal(shared.status, 400, 'a wallet is not set by issuing a key into a shared account');
    t.same(shared.body.errors, [{ field: 'wallet', message: "the account's wallet is set with accounts wallet" }]);
    const own = await c.admin('POST', '/_admin/v1/keys', { name: 'e', wallet: WALLET });
    t.equal(own.status, 201);
    t.equal(
      (await c.admin('GET', `/_admin/v1/accounts/${own.body.account_id}`)).body.wallet,
      WALLET,
      "into its own account: that account's",
    );

    t.equal((await c.admin('DELETE', '/_admin/v1/accounts/acme/wallet')).status, 200);
    t.equal((await c.admin('GET', `/_admin/v1/keys/${b}`)).body.wallet, null, 'detached from the account and its keys');
    t.equal((await c.admin('PUT', '/_admin/v1/accounts/nobody/wallet', { wallet: WALLET })).status, 404);
    t.equal((await c.admin('PUT', '/_admin/v1/accounts/acme/wallet', { wallet: 'nope' })).status, 400);

    const audit = (await c.admin('GET', '/_admin/v1/audit')).body.entries as { action: string; target: string; detail: unknown }[];
    const wallets = audit.filter((e) => e.action.includes('wallet')).map((e) => [e.action, e.target, e.detail]);
    t.match(wallets, [
      ['accounts.wallet.detach', acme, { account_id: acme, previous: SOL }],
      ['keys.wallet.attach', a, { wallet: SOL, account_id: acme, previous: WALLET }],
      ['accounts.wallet.attach', acme, { wallet: WALLET, account_id: acme, previous: null }],
    ]);
  });

  t.test('with money.approvals: 2 a deposit waits for a second money operator', async (t) => {
    const { control: c, tokens } = await startTeamControl(t, { cleo: ['read', 'money'], dan: ['read', 'money'] }, { store: kind });
    const { cleo, dan } = tokens as { cleo: string; dan: string };
    const acme = (await c.admin('POST', '/_admin/v1/accounts', { name: 'acme' })).body.id as string;
    const asked = await c.admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 700, reference: 'inv-1' }, cleo);
    t.equal(asked.status, 202, asked.text);
    t.match(asked.body, { action: 'accounts.deposit', target: acme, detail: { id: acme, amount: 700, reference: 'inv-1' } });
    t.equal(await balanceOf(c, 'acme'), 0, 'nothing moved yet');
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, cleo)).body.reason, 'self_approval');
    const approved = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, dan);
    t.equal(approved.status, 200, approved.text);
    t.match(approved.body.result, { account_id: acme, amount: 700, reference: 'inv-1', balance: 700, created: true });
    t.equal(await balanceOf(c, 'acme'), 700, 'moved once approved');
    const row = (await c.admin('GET', '/_admin/v1/audit?action=accounts.deposit')).body.entries[0];
    t.match(row, { actor: 'cleo', approved_by: 'dan', target: acme, detail: { amount: 700, created: true } });

    const wallet = await c.admin('PUT', '/_admin/v1/accounts/acme/wallet', { wallet: WALLET }, cleo);
    t.equal(wallet.status, 202, 'the wallet waits too');
    t.match(wallet.body, { action: 'accounts.wallet.attach', target: acme });
  });
});
