/**
 * Two people for money through svcctl, as real processes against a real control restarted with
 * `SVC_MONEY_APPROVALS=2` once its team is added: `pool fund`, `keys wallet`, and `operators add`
 * and `operators rotate` of a money operator print that they wait for a second operator (exit 0,
 * `--json`: the pending request) and funds nothing; the requester's own `approvals approve` is
 * refused; another operator's approves it and the pool is funded, the audit naming both;
 * `approvals reject --reason`; a request past its 24 hours is listed expired and refused; the
 * approval of an operator's add or rotation prints the new token, to the approver.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { spawnCli, spawnControl } from '../fixtures/cli';

t.test('pool fund waits for a second operator, who approves it through svcctl', async (t) => {
  const root = t.testdir();
  const dataDir = join(root, 'data');
  const cli = (args: string[]) => spawnCli(['--data-dir', dataDir, ...args]);
  const tokenFile = (name: string, token: string): string => {
    const file = join(root, `${name}.token`);
    writeFileSync(file, token + '\n', { mode: 0o600 });
    return file;
  };
  const operator = async (name: string, scopes: string): Promise<string> => {
    const added = await cli(['operators', 'add', name, '--scopes', scopes, '--json']);
    t.equal(added.code, 0, added.stderr);
    return tokenFile(name, JSON.parse(added.stdout).token);
  };
  // The team is set up first; with two-person money on, adding a money operator takes two people.
  const setup = await spawnControl(t, { dataDir, env: { SVC_MONEY_APPROVALS: '1' } });
  const cleo = await operator('cleo', 'read,money');
  const dan = await operator('dan', 'read,money,operators,keys');
  const ada = await operator('ada', 'read,money,operators');
  t.same(await setup.stop(), { code: 0, signal: null });
  await spawnControl(t, { dataDir, env: { SVC_MONEY_APPROVALS: '2' } });
  const as = (file: string, args: string[]) => cli(['--token-file', file, ...args]);
  const pool = async () => JSON.parse((await cli(['pool', 'show', '--json'])).stdout).pool as number;

  const asked = await as(cleo, ['pool', 'fund', '25.5']);
  t.equal(asked.code, 0, `a pending request is not a failure: ${asked.stderr}`);
  t.match(asked.stdout, /^Waiting for a second operator: nothing happened yet\.$/m);
  t.match(asked.stdout, /^Request apr_\w{12} \(pool\.fund on pool\) by cleo expires at \S+\.$/m);
  t.match(asked.stdout, /holding the scope money approves it with: svcctl approvals approve apr_\w{12}$/m);
  const id = /apr_\w{12}/.exec(asked.stdout)![0];
  t.equal(await pool(), 0, 'nothing funded yet');

  const json = await as(cleo, ['pool', 'fund', '1', '--json']);
  t.equal(json.code, 0);
  t.match(JSON.parse(json.stdout), { id: /^apr_/, status: 'pending', action: 'pool.fund', requested_by: 'cleo', expires_at: String });

  const listed = await as(dan, ['approvals', 'list', '--status', 'pending']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /^ID +STATUS +ACTION +TARGET +REQUESTED BY +REQUESTED +EXPIRES +DECIDED BY$/m);
  t.match(listed.stdout, new RegExp(`^${id} +pending +pool\\.fund +pool +cleo `, 'm'));

  const own = await as(cleo, ['approvals', 'approve', id]);
  t.equal(own.code, 1, 'the requester cannot approve their own');
  t.match(own.stderr, /cleo asked for this pool\.fund and cannot approve it too.*svc_conflict/);
  t.equal(await pool(), 0);

  const approved = await as(dan, ['approvals', 'approve', id]);
  t.equal(approved.code, 0, approved.stderr);
  t.match(approved.stdout, new RegExp(`^Approved ${id}: pool\\.fund on pool, asked by cleo, done\\.$`, 'm'));
  t.match(approved.stdout, /^Funded the pool with 25\.5\d* /m, 'then what pool fund itself prints');
  t.equal(await pool(), 25_500_000, 'funded by the approval');

  const audit = JSON.parse((await cli(['audit', 'list', '--action', 'pool.fund', '--json'])).stdout);
  t.match(audit.entries, [{ actor: 'cleo', approved_by: 'dan', detail: { amount: 25_500_000 } }], 'both names in the audit row');

  const other = JSON.parse(json.stdout).id as string;
  const rejected = await as(dan, ['approvals', 'reject', other, '--reason', 'a test']);
  t.equal(rejected.code, 0, rejected.stderr);
  t.match(rejected.stdout, new RegExp(`^Rejected ${other} \\(pool\\.fund, asked by cleo\\); nothing happened\\.$`, 'm'));

  // A request left alone past its 24 hours: the clock moved by hand in the database.
  const late = /apr_\w{12}/.exec((await as(cleo, ['pool', 'fund', '3'])).stdout)![0];
  const db = new Database(join(dataDir, 'control.db'));
  db.prepare('UPDATE approvals SET expires_at = requested_at - 1 WHERE id = ?').run(late);
  db.close();
  const expired = await as(dan, ['approvals', 'list', '--status', 'expired', '--json']);
  t.same(
    JSON.parse(expired.stdout).approvals.map((a: { id: string }) => a.id),
    [late],
    'listed as expired',
  );
  const tooLate = await as(dan, ['approvals', 'approve', late]);
  t.equal(tooLate.code, 1);
  t.match(tooLate.stderr, /expired at .*ask again.*svc_conflict/);
  t.equal(await pool(), 25_500_000, 'still only the approved funding');

  // A key's wallet, and an operator who gets money: the same two steps.
  const key = JSON.parse((await cli(['keys', 'issue', '--name', 'agent', '--json'])).stdout).id as string;
  const wallet = '0x52908400098527886E0F7030069857D2E4169EE7';
  const attach = await as(cleo, ['keys', 'wallet', key, wallet]);
  t.equal(attach.code, 0, attach.stderr);
  t.match(attach.stdout, new RegExp(`^Request apr_\\w{12} \\(keys\\.wallet\\.attach on ${key}\\) by cleo expires at \\S+\\.$`, 'm'));
  t.match(attach.stdout, /holding the scope money approves it/);
  const attachId = /apr_\w{12}/.exec(attach.stdout)![0];
  const attached = await as(dan, ['approvals', 'approve', attachId]);
  t.equal(attached.code, 0, attached.stderr);
  t.match(
    attached.stdout,
    new RegExp(`^${key}'s account \\(acc_\\w{12}\\) pays out to ${wallet}\\.$`, 'm'),
    'then what keys wallet itself prints',
  );
  const detach = await as(cleo, ['keys', 'wallet', key, '--detach', '--json']);
  t.match(JSON.parse(detach.stdout), { status: 'pending', action: 'keys.wallet.detach', target: key });

  const mint = await as(ada, ['operators', 'add', 'eve', '--scopes', 'read,money']);
  t.equal(mint.code, 0, mint.stderr);
  t.match(mint.stdout, /^Waiting for a second operator: nothing happened yet\.$/m);
  t.match(mint.stdout, /holding the scopes operators, read, money approves it/);
  t.notMatch(mint.stdout, /svc_op_/, 'no token yet');
  const mintId = /apr_\w{12}/.exec(mint.stdout)![0];
  const minted = await as(dan, ['approvals', 'approve', mintId]);
  t.equal(minted.code, 0, minted.stderr);
  t.match(minted.stdout, /^Added operator eve\. The token is shown once/m, 'the approver gets the token');
  const eve = tokenFile('eve', /^ {2}(svc_op_\S+)$/m.exec(minted.stdout)![1]!);
  t.equal((await as(eve, ['pool', 'show'])).code, 0, 'and it works');

  const takeover = await as(ada, ['operators', 'rotate', 'cleo']);
  t.equal(takeover.code, 0, takeover.stderr);
  t.match(takeover.stdout, /^Request apr_\w{12} \(operators\.rotate on cleo\) by ada expires at \S+\.$/m, 'rotating cleo waits');
  const rotated = await as(dan, ['approvals', 'approve', /apr_\w{12}/.exec(takeover.stdout)![0]]);
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(rotated.stdout, /^Rotated operator cleo\. The new token is shown once/m, 'the approver gets cleo’s new token');
  t.equal((await as(cleo, ['pool', 'show'])).code, 1, 'and cleo’s old one stopped');

  const bad = await cli(['approvals', 'list', '--status', 'maybe']);
  t.equal(bad.code, 2, 'an unknown status: exit 2');
  t.match(bad.stderr, /--status must be one of pending, approved, rejected, expired/);
});
