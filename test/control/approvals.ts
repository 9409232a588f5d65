/**
 * Two people for money (`money.approvals: 2`), on both stores: pool funding, marking a payout
 * paid, rotating the receipt key and a key's wallet attached or detached answer 202 with a
 * pending request and change nothing; a
 * second operator holding the action's own scope approves it (then it happens once, as asked,
 * with both names in its audit row) or rejects it; the requester cannot approve their own; a
 * request expires after 24 h; two approvals at once act once; a ledger rule broken at approval
 * leaves the request pending. With the default (1), the same routes act at once.
 * On two controls sharing one PostgreSQL database: a request made through one is approved
 * through the other, and approvals racing on both act once.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { APPROVAL_ID_PATTERN, APPROVAL_TTL_MS, MONEY_ACTION_SCOPES, MONEY_ACTIONS } from '../../protocol/approvals';
import { ACTION_SCOPED_ROUTES } from '../../protocol/scopes';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { startTeamControl, type Team } from '../fixtures/team';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { forEachStore, type StoreKind } from '../fixtures/stores';

const WALLET = '0x52908400098527886E0F7030069857D2E4169EE7';

/** Control with `money.approvals: 2`, and the operators `team` names added before it was turned on. */
async function control(
  t: Test,
  kind: StoreKind,
  team: Team,
  now?: () => number,
): Promise<{ c: TestControl; tokens: Record<string, string> }> {
  const { control: c, tokens } = await startTeamControl(t, team, { store: kind, ...(now ? { now } : {}) });
  return { c, tokens };
}

const MONEY = ['read', 'money'];

const poolOf = async (c: TestControl, token?: string): Promise<number> =>
  (await c.admin('GET', '/_admin/v1/pool', undefined, token)).body.pool as number;

t.test('the scopes of deciding are the actions’ own', async (t) => {
  t.same(
    [...new Set(Object.values(MONEY_ACTION_SCOPES))].sort(),
    [...ACTION_SCOPED_ROUTES['POST /_admin/v1/approvals/:id/approve']!].sort(),
    'the listener lets through exactly the scopes some money action needs',
  );
  t.same(ACTION_SCOPED_ROUTES['POST /_admin/v1/approvals/:id/reject'], ACTION_SCOPED_ROUTES['POST /_admin/v1/approvals/:id/approve']);
  t.same([...MONEY_ACTIONS].sort(), [
    'accounts.deposit',
    'accounts.refill.clear',
    'accounts.refill.set',
    'accounts.wallet.attach',
    'accounts.wallet.detach',
    'keys.wallet.attach',
    'keys.wallet.detach',
    'lps.add',
    'lps.cancel',
    'lps.deposit',
    'lps.withdraw',
    'operators.add',
    'operators.rotate',
    'payouts.mark_paid',
    'pool.fund',
    'receipts.rotate_key',
  ]);
});

forEachStore(t, (t, kind) => {
  t.test('with one approval (the default) money actions act at once', async (t) => {
    const c = await startTestControl(t, { store: kind });
    const funded = await c.admin('POST', '/_admin/v1/pool/fund', { amount: 5_000 });
    t.equal(funded.status, 201);
    t.equal(funded.body.amount, 5_000);
    t.equal(await poolOf(c), 5_000);
    t.same((await c.admin('GET', '/_admin/v1/approvals')).body, { approvals: [] }, 'no request recorded');
  });

  t.test('a pool funding waits for a second operator, who makes it happen', async (t) => {
    const clock = manualClock();
    const team = { cleo: MONEY, dan: MONEY, eve: ['read', 'receipts'], kim: ['read', 'keys'] };
    const { c, tokens } = await control(t, kind, team, clock.now);
    const { cleo, dan, eve, kim } = tokens as Record<keyof typeof team, string>;

    const asked = await c.admin('POST', '/_admin/v1/pool/fund', { amount: 2_500, note: 'seed' }, cleo);
    t.equal(asked.status, 202, 'accepted, not done');
    t.match(asked.body, {
      id: APPROVAL_ID_PATTERN,
      status: 'pending',
      action: 'pool.fund',
      target: 'pool',
      detail: { amount: 2_500, note: 'seed' },
      requested_by: 'cleo',
      requested_at: new Date(clock.now()).toISOString(),
      expires_at: new Date(clock.now() + APPROVAL_TTL_MS).toISOString(),
      decided_by: null,
    });
    const id = asked.body.id as string;
    t.equal(await poolOf(c), 0, 'the pool is not funded yet');

    const listed = await c.admin('GET', '/_admin/v1/approvals?status=pending', undefined, kim);
    t.same(
      listed.body.approvals.map((a: { id: string }) => a.id),
      [id],
      'listed for anyone with read',
    );
    t.equal((await c.admin('GET', `/_admin/v1/approvals/${id}`, undefined, kim)).body.status, 'pending');

    const self = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, cleo);
    t.equal(self.status, 409, 'the requester cannot approve their own');
    t.equal(self.body.code, 'svc_conflict');
    t.equal(self.body.reason, 'self_approval');

    const noScope = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, kim);
    t.equal(noScope.status, 403, 'an operator holding no money scope is refused by the listener');
    t.equal(noScope.body.code, 'svc_forbidden_scope');
    const wrongScope = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, eve);
    t.equal(wrongScope.status, 403, 'receipts does not approve a funding');
    t.equal(wrongScope.body.code, 'svc_forbidden_scope');
    t.equal(wrongScope.body.scope, 'money', 'the problem names the scope needed');
    t.match(wrongScope.body.detail, /needs the scope money/);
    t.equal(await poolOf(c), 0, 'still nothing');

    clock.advance(60_000);
    const approved = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, dan);
    t.equal(approved.status, 200, approved.text);
    t.match(approved.body.approval, { id, status: 'approved', decided_by: 'dan', decided_at: new Date(clock.now()).toISOString() });
    t.match(approved.body.result, { amount: 2_500, transfer_id: Number, pool: { pool: 2_500 } }, 'the action’s own answer');
    t.equal(await poolOf(c), 2_500, 'funded now');

    const again = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, dan);
    t.equal(again.status, 409, 'an approved request acts once');
    t.equal(again.body.reason, 'decided');
    t.equal(await poolOf(c), 2_500);

    const audit = await c.admin('GET', '/_admin/v1/audit?limit=100');
    const rows = audit.body.entries.filter((e: { action: string }) => e.action === 'pool.fund' || e.action.startsWith('approvals.'));
    t.match(
      rows,
      [
        { action: 'pool.fund', actor: 'cleo', approved_by: 'dan', token_id: /^opt_/, detail: { amount: 2_500, note: 'seed' } },
        { action: 'approvals.request', actor: 'cleo', target: id, approved_by: null, detail: { action: 'pool.fund', target: 'pool' } },
      ],
      'the request and the funding, under the requester, with the approver',
    );
    const fundRow = rows[0] as { token_id: string };
    const cleoTokens = (await c.admin('GET', '/_admin/v1/operators/cleo')).body.tokens as { token_id: string }[];
    t.equal(fundRow.token_id, cleoTokens[0]!.token_id, 'with the token the requester used');
    t.equal(rows.length, 2);
  });

  t.test('rejection, withdrawal, expiry and a requester gone', async (t) => {
    const clock = manualClock();
    const { c, tokens } = await control(t, kind, { cleo: MONEY, dan: MONEY }, clock.now);
    const { cleo, dan } = tokens as { cleo: string; dan: string };

    const one = (await c.admin('POST', '/_admin/v1/pool/fund', { amount: 100 }, cleo)).body.id as string;
    const rejected = await c.admin('POST', `/_admin/v1/approvals/${one}/reject`, { reason: 'wrong amount' }, dan);
    t.equal(rejected.status, 200);
    t.match(rejected.body, { id: one, status: 'rejected', decided_by: 'dan', reason: 'wrong amount' });
    const late = await c.admin('POST', `/_admin/v1/approvals/${one}/approve`, {}, dan);
    t.equal(late.status, 409, 'a rejected request cannot be approved');
    t.equal(late.body.reason, 'decided');

    const two = (await c.admin('POST', '/_admin/v1/pool/fund', { amount: 200 }, cleo)).body.id as string;
    const withdrawn = await c.admin('POST', `/_admin/v1/approvals/${two}/reject`, undefined, cleo);
    t.equal(withdrawn.status, 200, 'the requester may withdraw their own');
    t.match(withdrawn.body, { status: 'rejected', decided_by: 'cleo', reason: null });

    const three = (await c.admin('POST', '/_admin/v1/pool/fund', { amount: 300 }, cleo)).body.id as string;
    clock.advance(APPROVAL_TTL_MS - 1);
    t.equal((await c.admin('GET', `/_admin/v1/approvals/${three}`)).body.status, 'pending', 'pending up to its last millisecond');
    clock.advance(1);
    t.equal((await c.admin('GET', `/_admin/v1/approvals/${three}`)).body.status, 'expired', 'expired after 24 h');
    const expired = await c.admin('POST', `/_admin/v1/approvals/${three}/approve`, {}, dan);
    t.equal(expired.status, 409);
    t.equal(expired.body.reason, 'expired');
    t.match(expired.body.detail, /expired at/);
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${three}/reject`, {}, dan)).status, 409, 'nor rejected');
    t.same(
      (await c.admin('GET', '/_admin/v1/approvals?status=expired')).body.approvals.map((a: { id: string }) => a.id),
      [three],
      'listed as expired',
    );

    const four = (await c.admin('POST', '/_admin/v1/pool/fund', { amount: 400 }, cleo)).body.id as string;
    t.equal((await c.admin('POST', '/_admin/v1/operators/cleo/revoke', {})).status, 200);
    const gone = await c.admin('POST', `/_admin/v1/approvals/${four}/approve`, {}, dan);
    t.equal(gone.status, 409, 'a revoked requester’s request is not approved');
    t.equal(gone.body.reason, 'requester_inactive');
    t.equal(await poolOf(c), 0, 'none of them funded the pool');

    t.equal((await c.admin('POST', '/_admin/v1/approvals/apr_111111111111/approve', {}, dan)).status, 404, 'an unknown id is 404');
    const bad = await c.admin('GET', '/_admin/v1/approvals?status=maybe');
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'svc_bad_request');
    const badReason = await c.admin('POST', `/_admin/v1/approvals/${four}/reject`, { reason: 'x'.repeat(501) }, dan);
    t.equal(badReason.status, 400, 'a reason over 500 characters is refused');
    t.equal(badReason.body.code, 'svc_bad_request');
  });

  t.test('a payout that breaks a ledger rule when approved leaves the request pending', async (t) => {
    const { c, tokens } = await control(t, kind, { cleo: MONEY, dan: MONEY });
    const { cleo, dan } = tokens as { cleo: string; dan: string };
    const asked = await c.admin('POST', '/_admin/v1/payouts/mark-paid', { wallet: WALLET, amount: 1_000, reference: 'tx-1' }, cleo);
    t.equal(asked.status, 202);
    t.match(asked.body, { action: 'payouts.mark_paid', target: WALLET, detail: { wallet: WALLET, amount: 1_000, reference: 'tx-1' } });
    const approved = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, dan);
    t.equal(approved.status, 409, 'nothing is owed to the wallet');
    t.equal(approved.body.code, 'svc_conflict');
    t.not(approved.body.reason, 'decided', 'the ledger’s reason, not the request’s');
    t.equal((await c.admin('GET', `/_admin/v1/approvals/${asked.body.id}`)).body.status, 'pending', 'still pending');
    const audit = await c.admin('GET', '/_admin/v1/audit?action=payouts.mark_paid');
    t.same(audit.body.entries, [], 'no payout recorded');
  });

  t.test('a receipt key rotation is approved by another receipts operator', async (t) => {
    const { c, tokens } = await control(t, kind, { eve: ['read', 'receipts'], cleo: MONEY });
    const { eve, cleo } = tokens as { eve: string; cleo: string };
    const asked = await c.admin('POST', '/_admin/v1/receipts/rotate-key', undefined, eve);
    t.equal(asked.status, 202);
    t.match(asked.body, { action: 'receipts.rotate_key', target: null, detail: {} });
    const byMoney = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, cleo);
    t.equal(byMoney.status, 403, 'money does not approve a key rotation');
    t.equal(byMoney.body.scope, 'receipts');
    const byRoot = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {});
    t.equal(byRoot.status, 200, 'root holds receipts');
    t.match(byRoot.body.result, { kid: String, previous_kid: String, published: Array });
    t.not(byRoot.body.result.kid, byRoot.body.result.previous_kid, 'a new key signs');
    const row = (await c.admin('GET', '/_admin/v1/audit?action=receipts.rotate_key')).body.entries[0];
    t.match(row, { actor: 'eve', approved_by: 'root', target: byRoot.body.result.kid });
  });

  t.test('a key’s payout wallet attached or detached waits for a second money operator', async (t) => {
    const { c, tokens } = await control(t, kind, { cleo: MONEY, dan: MONEY });
    const { cleo, dan } = tokens as { cleo: string; dan: string };
    const key = (await c.admin('POST', '/_admin/v1/keys', { name: 'agent' })).body.id as string;
    const walletOf = async () => (await c.admin('GET', `/_admin/v1/keys/${key}`)).body.wallet as string | null;

    const asked = await c.admin('PUT', `/_admin/v1/keys/${key}/wallet`, { wallet: WALLET }, cleo);
    t.equal(asked.status, 202, 'attaching waits');
    t.match(asked.body, { action: 'keys.wallet.attach', target: key, detail: { id: key, wallet: WALLET }, requested_by: 'cleo' });
    t.equal(await walletOf(), null, 'no wallet yet');
    const byRoot = await c.admin('PUT', `/_admin/v1/keys/${key}/wallet`, { wallet: WALLET });
    t.equal(byRoot.status, 202, 'root waits like anyone');
    t.equal(
      (await c.admin('PUT', '/_admin/v1/keys/key_nope/wallet', { wallet: WALLET }, cleo)).status,
      404,
      'an unknown key is 404 at once',
    );
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, cleo)).body.reason, 'self_approval');
    const attached = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, dan);
    t.equal(attached.status, 200, attached.text);
    t.match(attached.body.result, { id: key, wallet: WALLET, version: Number }, 'the key, as the route answers it');
    t.equal(await walletOf(), WALLET, 'attached now');

    const withWallet = await c.admin('POST', '/_admin/v1/keys', { name: 'agent 2', wallet: WALLET });
    t.equal(withWallet.status, 409, 'nor is a key issued with a wallet');
    t.equal(withWallet.body.reason, 'two_person');
    t.match(withWallet.body.detail, /issue the key without one, then svcctl keys wallet/);

    const detach = await c.admin('DELETE', `/_admin/v1/keys/${key}/wallet`, undefined, dan);
    t.equal(detach.status, 202, 'detaching waits too');
    t.match(detach.body, { action: 'keys.wallet.detach', target: key, detail: { id: key } });
    t.equal(await walletOf(), WALLET);
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${detach.body.id}/approve`, {}, cleo)).status, 200);
    t.equal(await walletOf(), null, 'detached now');

    const audit = (await c.admin('GET', '/_admin/v1/audit?action=keys')).body.entries as { action: string }[];
    t.match(
      audit.filter((e) => e.action.startsWith('keys.wallet')),
      [
        { action: 'keys.wallet.detach', actor: 'dan', approved_by: 'cleo', target: key, detail: { previous: WALLET } },
        { action: 'keys.wallet.attach', actor: 'cleo', approved_by: 'dan', target: key, detail: { wallet: WALLET, previous: null } },
      ],
      'each under its requester, with its approver',
    );
  });

  t.test('approvals racing each other act once', async (t) => {
    const { c, tokens } = await control(t, kind, { cleo: MONEY, dan: MONEY });
    const { cleo, dan } = tokens as { cleo: string; dan: string };
    const id = (await c.admin('POST', '/_admin/v1/pool/fund', { amount: 700 }, cleo)).body.id as string;
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, i % 2 ? dan : undefined)),
    );
    t.same(answers.map((a) => a.status).sort(), [200, 409, 409, 409, 409, 409], 'one approval acts, the others are told it was decided');
    t.equal(await poolOf(c), 700, 'funded once');
  });
});

if (!skipWithoutPostgres(t)) {
  t.test('two controls on one database: asked through one, approved through the other, once', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const { control: a, tokens } = await startTeamControl(
      t,
      { cleo: MONEY, dan: MONEY },
      { dataDir: join(root, 'a'), flags: { databaseUrl } },
    );
    const b = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl }, env: { SVC_MONEY_APPROVALS: '2' } });
    const { cleo, dan } = tokens as { cleo: string; dan: string };
    const asked = await a.admin('POST', '/_admin/v1/pool/fund', { amount: 900 }, cleo);
    t.equal(asked.status, 202);
    t.equal((await b.admin('GET', `/_admin/v1/approvals/${asked.body.id}`, undefined, dan)).body.status, 'pending', 'B sees the request');
    const [onA, onB] = await Promise.all([
      a.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, dan),
      b.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, dan),
    ]);
    t.same([onA.status, onB.status].sort(), [200, 409], 'one control acts, the other is told');
    t.equal(await poolOf(a), 900, 'funded once');
    t.equal(await poolOf(b, dan), 900);
  });
}
