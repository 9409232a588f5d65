/**
 * No operator reaches past its own scopes, on both stores: it grants only scopes it holds, and
 * revokes or rotates only operators whose scopes are all among its own (403
 * `svc_forbidden_scope` naming the scope, nothing changed). With `money.approvals: 2`, adding an
 * operator who gets `money` or `operators` is a two-person action: 202 and a pending request
 * holding no token; the approver must be someone else holding `operators` and every scope
 * granted; the token is made at approval and answered to the approver only, and no plaintext
 * token is stored anywhere (database files, audit, approvals, logs). Rotating another operator
 * who holds `money` or `operators` waits the same way (the new token works as them); one's own
 * token, or one without those scopes, is rotated at once.
 */
import t, { type Test } from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { APPROVAL_ID_PATTERN } from '../../protocol/approvals';
import { hashOperatorToken } from '../../protocol/operators';
import { captureLogs, startTestControl, type TestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';
import { startTeamControl } from '../fixtures/team';

async function add(c: TestControl, name: string, scopes: readonly string[], token?: string) {
  return c.admin('POST', '/_admin/v1/operators', { name, scopes }, token);
}

async function addOk(c: TestControl, name: string, scopes: readonly string[], token?: string): Promise<string> {
  const res = await add(c, name, scopes, token);
  if (res.status !== 201) throw new Error(`add ${name}: ${res.status} ${res.text}`);
  return res.body.token as string;
}

/** 403 `svc_forbidden_scope` naming `scope`. */
function forbidden(t: Test, res: { status: number; body: { code?: string; scope?: string | null } }, scope: string, what: string): void {
  t.equal(res.status, 403, `${what}: 403`);
  t.equal(res.body.code, 'svc_forbidden_scope', `${what}: svc_forbidden_scope`);
  t.equal(res.body.scope, scope, `${what}: names ${scope}`);
}

const names = async (c: TestControl): Promise<string[]> =>
  (await c.admin('GET', '/_admin/v1/operators')).body.operators.map((o: { name: string }) => o.name);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

forEachStore(t, (t, kind) => {
  t.test('an operator grants only the scopes it holds', async (t) => {
    const c = await startTestControl(t, { store: kind });
    const ops = await addOk(c, 'ops', ['operators']);
    const all = ['read', 'keys', 'settler', 'money', 'receipts', 'operators'];
    forbidden(t, await add(c, 'mallory', all, ops), 'read', 'operators alone cannot grant read, keys, settler, money, receipts');
    const detail = (await add(c, 'mallory', ['operators', 'money'], ops)).body as { detail: string; scope: string };
    t.equal(detail.scope, 'money');
    t.match(detail.detail, /ops cannot grant the scope money: it does not hold money itself/);
    t.equal((await add(c, 'ops2', ['operators'], ops)).status, 201, 'a scope it holds, it grants');

    const keysOps = await addOk(c, 'keys-ops', ['operators', 'keys', 'read']);
    t.equal((await add(c, 'clerk', ['read', 'keys'], keysOps)).status, 201, 'within its own scopes');
    forbidden(t, await add(c, 'banker', ['read', 'money'], keysOps), 'money', 'not money');
    t.same(await names(c), ['root', 'clerk', 'keys-ops', 'ops', 'ops2'], 'no refused operator was added');
    const audit = (await c.admin('GET', '/_admin/v1/audit?action=operators.add')).body.entries as { target: string }[];
    t.notOk(
      audit.some((e) => e.target === 'mallory' || e.target === 'banker'),
      'and none is in the audit log',
    );
  });

  t.test('revoke and rotate reach only operators whose scopes are all the caller’s', async (t) => {
    const c = await startTestControl(t, { store: kind });
    const keysOps = await addOk(c, 'keys-ops', ['operators', 'keys']);
    await addOk(c, 'reader', ['read']);
    await addOk(c, 'banker', ['money', 'keys']);
    await addOk(c, 'peer', ['keys', 'operators']);
    await addOk(c, 'clerk', ['keys']);

    forbidden(t, await c.admin('POST', '/_admin/v1/operators/reader/revoke', undefined, keysOps), 'read', 'revoke a reader');
    forbidden(t, await c.admin('POST', '/_admin/v1/operators/banker/revoke', undefined, keysOps), 'money', 'revoke a banker');
    forbidden(t, await c.admin('POST', '/_admin/v1/operators/reader/rotate', {}, keysOps), 'read', 'rotate a reader');
    forbidden(t, await c.admin('POST', '/_admin/v1/operators/banker/rotate', {}, keysOps), 'money', 'rotate a banker');
    const stillActive = (await c.admin('GET', '/_admin/v1/operators')).body.operators.filter(
      (o: { name: string; status: string }) => o.status === 'active',
    );
    t.equal(stillActive.length, 6, 'nobody was revoked');
    t.same((await c.admin('GET', '/_admin/v1/audit?action=operators.rotate')).body.entries, [], 'nor rotated');

    t.equal((await c.admin('POST', '/_admin/v1/operators/clerk/rotate', {}, keysOps)).status, 200, 'a subset: rotated');
    t.equal((await c.admin('POST', '/_admin/v1/operators/peer/rotate', {}, keysOps)).status, 200, 'the same scopes: rotated');
    t.equal((await c.admin('POST', '/_admin/v1/operators/clerk/revoke', undefined, keysOps)).status, 200, 'and revoked');
    t.equal((await c.admin('POST', '/_admin/v1/operators/banker/revoke')).status, 200, 'root revokes anyone but root');
  });

  t.test('with two-person money, minting money or operators takes two people', async (t) => {
    const logs = captureLogs();
    const team = {
      ada: ['read', 'money', 'operators'],
      ben: ['read', 'operators'],
      cleo: ['read', 'money'],
      dan: ['read', 'money', 'operators', 'keys'],
    };
    const { control: c, tokens } = await startTeamControl(t, team, { store: kind, log: logs.log });
    const { ada, ben, cleo, dan } = tokens as Record<keyof typeof team, string>;

    t.equal((await add(c, 'kim', ['read'], ada)).status, 201, 'an operator with neither money nor operators is added at once');
    forbidden(t, await add(c, 'mal', ['read', 'money'], ben), 'money', 'the grant rule comes first: ben holds no money');

    const asked = await add(c, 'eve', ['read', 'money'], ada);
    t.equal(asked.status, 202, 'adding a money operator waits');
    t.match(asked.body, {
      id: APPROVAL_ID_PATTERN,
      status: 'pending',
      action: 'operators.add',
      target: 'eve',
      detail: { name: 'eve', scopes: ['read', 'money'] },
      requested_by: 'ada',
    });
    t.notMatch(asked.text, /svc_op_/, 'no token in the pending answer');
    const id = asked.body.id as string;
    t.equal((await c.admin('GET', '/_admin/v1/operators/eve')).status, 404, 'eve does not exist yet');

    const self = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, ada);
    t.equal(self.status, 409, 'not by the requester');
    t.equal(self.body.reason, 'self_approval');
    forbidden(t, await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, cleo), 'operators', 'money alone does not approve an add');
    forbidden(t, await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, ben), 'money', 'nor operators without money');
    t.equal((await c.admin('GET', '/_admin/v1/operators/eve')).status, 404, 'still nobody');

    const approved = await c.admin('POST', `/_admin/v1/approvals/${id}/approve`, {}, dan);
    t.equal(approved.status, 200, approved.text);
    t.match(approved.body, {
      approval: { id, status: 'approved', decided_by: 'dan' },
      result: { name: 'eve', token: /^svc_op_/, token_id: /^opt_/, scopes: ['read', 'money'] },
    });
    const eve = approved.body.result.token as string;
    t.equal((await c.admin('GET', '/_admin/v1/status', undefined, eve)).status, 200, 'the approver’s answer holds eve’s token');
    const row = (await c.admin('GET', '/_admin/v1/audit?action=operators.add&operator=ada')).body.entries[0];
    t.match(row, { actor: 'ada', approved_by: 'dan', target: 'eve', detail: { scopes: ['read', 'money'], token_id: /^opt_/ } });

    // A rotation hands over a working token: another money operator's waits too.
    const takeover = await c.admin('POST', '/_admin/v1/operators/cleo/rotate', {}, ada);
    t.equal(takeover.status, 202, 'rotating another money operator waits');
    t.match(takeover.body, { action: 'operators.rotate', target: 'cleo', detail: { name: 'cleo', scopes: ['read', 'money'] } });
    t.notMatch(takeover.text, /svc_op_/);
    t.equal((await c.admin('GET', '/_admin/v1/status', undefined, cleo)).status, 200, 'cleo’s token still works');
    forbidden(t, await c.admin('POST', `/_admin/v1/approvals/${takeover.body.id}/approve`, {}, ben), 'money', 'approving it needs money');
    const rotated = await c.admin('POST', `/_admin/v1/approvals/${takeover.body.id}/approve`, {}, dan);
    t.equal(rotated.status, 200, rotated.text);
    t.match(rotated.body.result, { name: 'cleo', token: /^svc_op_/, replaced: [{ token_id: /^opt_/ }] });
    t.equal((await c.admin('GET', '/_admin/v1/status', undefined, cleo)).status, 401, 'then the old one stops');
    const own = await c.admin('POST', '/_admin/v1/operators/ada/rotate', {}, ada);
    t.equal(own.status, 200, 'one’s own token is rotated at once');
    t.equal(
      (await c.admin('POST', '/_admin/v1/operators/kim/rotate', {}, own.body.token)).status,
      200,
      'and one without money or operators',
    );

    const opsAsked = await add(c, 'ops2', ['operators'], ben);
    t.equal(opsAsked.status, 202, 'adding an operators operator waits too');
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${opsAsked.body.id}/approve`, {}, dan)).status, 200);

    const first = await add(c, 'zed', ['money'], dan);
    const second = await add(c, 'zed', ['money'], own.body.token);
    t.equal((await c.admin('POST', `/_admin/v1/approvals/${first.body.id}/approve`, {}, own.body.token)).status, 200);
    const taken = await c.admin('POST', `/_admin/v1/approvals/${second.body.id}/approve`, {}, dan);
    t.equal(taken.status, 409, 'a name taken meanwhile');
    t.match(taken.body.detail, /an operator named zed exists/);
    t.equal((await c.admin('GET', `/_admin/v1/approvals/${second.body.id}`)).body.status, 'pending', 'leaves the request pending');

    // Only the approver's answer held the token: not the request, the audit, the logs, or the database.
    const seen = [
      (await c.admin('GET', '/_admin/v1/approvals')).text,
      (await c.admin('GET', `/_admin/v1/approvals/${id}`)).text,
      (await c.admin('GET', '/_admin/v1/audit?limit=1000')).text,
      (await c.admin('GET', '/_admin/v1/operators')).text,
      logs.text(),
    ];
    t.ok(logs.lines.length > 0, 'the logs were captured');
    for (const text of seen) t.notOk(text.includes(eve) || text.includes(eve.slice('svc_op_'.length)), 'no token in what is shown');
    if (kind === 'sqlite') {
      const files = filesUnder(c.dataDir);
      t.ok(
        files.some((f) => f.endsWith('control.db')),
        'the database is scanned',
      );
      t.same(
        files.filter((f) => readFileSync(f).includes(Buffer.from(eve.slice('svc_op_'.length)))),
        [],
        'the token is in no file',
      );
      t.ok(
        files.some((f) => readFileSync(f).includes(Buffer.from(hashOperatorToken(eve)))),
        'its hash is',
      );
    }
  });
});

t.test('an add is approved only while its requester still holds what it grants', async (t) => {
  const { control: c, tokens } = await startTeamControl(t, { ada: ['read', 'money', 'operators'], dan: ['read', 'money', 'operators'] });
  const asked = await add(c, 'eve', ['read', 'money'], tokens.ada);
  t.equal(asked.status, 202);
  // No route narrows scopes; the database is changed by hand to show the check.
  const db = new Database(join(c.dataDir, 'control.db'));
  db.prepare(`UPDATE operators SET scopes = '["read","operators"]' WHERE name = 'ada'`).run();
  db.close();
  const refused = await c.admin('POST', `/_admin/v1/approvals/${asked.body.id}/approve`, {}, tokens.dan);
  t.equal(refused.status, 409);
  t.equal(refused.body.reason, 'requester_scope');
  t.match(refused.body.detail, /ada, who asked for this operators\.add, no longer holds the scope money/);
  t.equal((await c.admin('GET', '/_admin/v1/operators/eve')).status, 404, 'nobody added');
});
