/**
 * `svcctl operators …`, `svcctl audit list` and `--token-file` as real processes against a
 * real control: add (its `--json` shape), list, rotate with and without a grace, revoke, root's
 * revocation and rotation refused, a scope the caller lacks not granted; which token svcctl presents (`--token-file`, then `SVC_ADMIN_TOKEN`, then
 * the data dir's `admin.token`), told apart by the audit log's operator; and `serve control`
 * and `up` refusing an operator's token as root's (exit 2).
 */
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnCli, spawnControl } from '../fixtures/cli';

t.test('operators add, list, rotate, revoke and audit list through svcctl', async (t) => {
  const root = t.testdir();
  const dataDir = join(root, 'data');
  await spawnControl(t, { dataDir });
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => spawnCli(['--data-dir', dataDir, ...args], { env });
  const tokenFile = (name: string, token: string): string => {
    const file = join(root, `${name}.token`);
    writeFileSync(file, token + '\n', { mode: 0o600 });
    return file;
  };

  const added = await cli(['operators', 'add', 'alice', '--scopes', 'read,keys', '--expires', '30d', '--json']);
  t.equal(added.code, 0, added.stderr);
  const alice = JSON.parse(added.stdout);
  t.same(Object.keys(alice).sort(), ['created_at', 'expires_at', 'name', 'scopes', 'token', 'token_id'], '--json: exactly these fields');
  t.match(alice, { name: 'alice', token: /^svc_op_/, token_id: /^opt_/, scopes: ['read', 'keys'] });
  t.equal(Date.parse(alice.expires_at) - Date.parse(alice.created_at), 30 * 86_400_000, 'expires in 30 days');
  const aliceFile = tokenFile('alice', alice.token);

  const rootRefused = await cli(['operators', 'revoke', 'root']);
  t.equal(rootRefused.code, 1, 'root is not revoked, by root either');
  t.match(rootRefused.stderr, /root is never revoked.*svc_conflict/);

  const human = await cli(['operators', 'add', 'ops-lead', '--scopes', 'operators,keys,read']);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /Added operator ops-lead\. The token is shown once/);
  t.match(human.stdout, /^ {2}svc_op_\S+$/m, 'the token on a line of its own');
  t.match(human.stdout, /scopes +read, keys, operators/, 'the scopes in their catalogue order');

  const unknown = await cli(['operators', 'add', 'x', '--scopes', 'read,everything']);
  t.equal(unknown.code, 2, 'an unknown scope: exit 2');
  t.match(unknown.stderr, /--scopes: unknown scope everything/);
  const reserved = await cli(['operators', 'add', 'root', '--scopes', 'read']);
  t.equal(reserved.code, 2, 'root: refused by control as a bad request (exit 2)');
  t.match(reserved.stderr, /reserved.*svc_bad_request/);
  const duplicate = await cli(['operators', 'add', 'alice', '--scopes', 'read']);
  t.equal(duplicate.code, 1);
  t.match(duplicate.stderr, /svc_conflict/);

  const list = await cli(['operators', 'list', '--json']);
  t.equal(list.code, 0, list.stderr);
  t.same(
    JSON.parse(list.stdout).operators.map((o: { name: string }) => o.name),
    ['root', 'alice', 'ops-lead'],
  );
  const table = await cli(['operators', 'list']);
  t.match(table.stdout, /^NAME +SCOPES +STATUS +CREATED +LAST USED +EXPIRES +REVOKED +TOKENS$/m);
  t.match(table.stdout, new RegExp(`^alice +read,keys +active .*${alice.token_id}$`, 'm'));

  // Which token svcctl presents: --token-file, then SVC_ADMIN_TOKEN, then admin.token (root).
  const rootToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  t.equal((await cli(['--token-file', aliceFile, 'keys', 'issue', '--name', 'file'], { SVC_ADMIN_TOKEN: rootToken })).code, 0);
  t.equal((await cli(['keys', 'issue', '--name', 'env'], { SVC_ADMIN_TOKEN: alice.token })).code, 0);
  t.equal((await cli(['keys', 'issue', '--name', 'data dir'])).code, 0);
  const issued = await cli(['audit', 'list', '--action', 'keys.issue', '--json']);
  t.equal(issued.code, 0, issued.stderr);
  t.same(
    JSON.parse(issued.stdout).entries.map((e: { actor: string; token_id: string }) => [e.actor, e.token_id]),
    [
      ['root', 'root'],
      ['alice', alice.token_id],
      ['alice', alice.token_id],
    ],
    '--token-file wins over SVC_ADMIN_TOKEN, which wins over admin.token',
  );
  const refused = await cli(['--token-file', aliceFile, 'flag', 'set', 'maintenance_mode', 'on']);
  t.equal(refused.code, 1, 'a scope alice lacks: exit 1');
  t.match(refused.stderr, /needs the scope flags.*svc_forbidden_scope/);
  const missing = await cli(['--token-file', join(root, 'nope'), 'status']);
  t.equal(missing.code, 2, 'a --token-file that cannot be read: exit 2');
  t.match(missing.stderr, /--token-file .*nope cannot be read/);
  t.equal((await cli(['--token-file', tokenFile('empty', ''), 'status'])).code, 2, 'an empty one too');

  const auditHuman = await cli(['audit', 'list', '--operator', 'alice', '--limit', '1']);
  t.equal(auditHuman.code, 0, auditHuman.stderr);
  t.match(auditHuman.stdout, /^# +AT +OPERATOR +TOKEN +ACTION +TARGET +APPROVED BY$/m);
  t.match(auditHuman.stdout, new RegExp(`alice +${alice.token_id} +keys\\.issue`));
  const more = /^more: --cursor (\S+)$/m.exec(auditHuman.stdout)?.[1];
  t.ok(more, 'one entry, and the cursor of the rest');
  const rest = await cli(['audit', 'list', '--operator', 'alice', '--cursor', more!, '--json']);
  t.equal(JSON.parse(rest.stdout).entries.length, 1, 'the rest');
  t.equal((await cli(['audit', 'list', '--since', 'yesterday'])).code, 2, '--since takes an ISO time');
  const since = await cli(['audit', 'list', '--since', '2999-01-01T00:00:00Z', '--json']);
  t.same(JSON.parse(since.stdout), { entries: [], next_cursor: null });

  // Rotation: with a grace the old token keeps working; without, every older one stops.
  const graced = await cli(['operators', 'rotate', 'alice', '--grace', '1h', '--json']);
  t.equal(graced.code, 0, graced.stderr);
  const second = JSON.parse(graced.stdout);
  t.match(second, { name: 'alice', token: /^svc_op_/, replaced: [{ token_id: alice.token_id }] });
  t.equal((await cli(['--token-file', aliceFile, 'status'])).code, 0, 'the old token works during the grace');
  const secondFile = tokenFile('alice-2', second.token);
  t.equal((await cli(['--token-file', secondFile, 'status'])).code, 0, 'the new one works');
  const now = await cli(['operators', 'rotate', 'alice']);
  t.equal(now.code, 0, now.stderr);
  t.match(now.stdout, /The previous token opt_\S+ no longer works\./);
  const third = /^ {2}(svc_op_\S+)$/m.exec(now.stdout)![1]!;
  for (const [what, file] of [
    ['the first token', aliceFile],
    ['the second token', secondFile],
  ] as const) {
    const res = await cli(['--token-file', file, 'status']);
    t.equal(res.code, 1, `${what}: refused`);
    t.match(res.stderr, /svc_unauthorized/);
  }
  const thirdFile = tokenFile('alice-3', third);
  t.equal((await cli(['--token-file', thirdFile, 'status'])).code, 0, 'the newest works');

  // Revocation.
  const revoked = await cli(['--token-file', thirdFile, 'operators', 'revoke', 'alice']);
  t.equal(revoked.code, 1, 'alice cannot revoke (no operators scope)');
  const leadToken = /^ {2}(svc_op_\S+)$/m.exec(human.stdout)![1]!;
  const lead = tokenFile('ops-lead', leadToken);
  const byLead = await cli(['--token-file', lead, 'operators', 'revoke', 'alice']);
  t.equal(byLead.code, 0, byLead.stderr);
  t.match(byLead.stdout, /Revoked operator alice; its tokens no longer work\./);
  t.equal((await cli(['--token-file', thirdFile, 'status'])).code, 1, 'alice’s token stopped');
  const rootRevoked = await cli(['--token-file', lead, 'operators', 'revoke', 'root']);
  t.equal(rootRevoked.code, 1, 'root is revoked by no one');
  t.match(rootRevoked.stderr, /root is never revoked.*svc_conflict/);
  const rootRotated = await cli(['--token-file', lead, 'operators', 'rotate', 'root']);
  t.equal(rootRotated.code, 1, 'nor rotated by anyone but root');
  t.match(rootRotated.stderr, /rotated by root only.*svc_forbidden_scope/);
  t.equal((await cli(['status'])).code, 0, 'the data dir’s admin.token still opens the admin API');
  const beyond = await cli(['--token-file', lead, 'operators', 'add', 'banker', '--scopes', 'read,money']);
  t.equal(beyond.code, 1, 'ops-lead grants no scope it lacks');
  t.match(beyond.stderr, /cannot grant the scope money.*svc_forbidden_scope/);
});

t.test('serve control and up refuse an operator token as root’s: exit 2', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const env = { SVC_ADMIN_TOKEN: 'svc_op_' + '2'.repeat(44) };
  for (const args of [
    ['serve', 'control', '--data-dir', dataDir, '--control-port', '0', '--api-port', '0', '--indexer-port', '0'],
    ['up', '--data-dir', dataDir, '--control-port', '0', '--api-port', '0', '--indexer-port', '0', '--gateway-port', '0'],
  ]) {
    const res = await spawnCli(args, { env, cwd: dir });
    t.equal(res.code, 2, `${args[0]}: exit 2`);
    t.match(res.stderr, /SVC_ADMIN_TOKEN \(adminToken\) holds an operator's token \(svc_op_…\), but on control it sets root's token/);
    t.notOk(res.stderr.includes(env.SVC_ADMIN_TOKEN), 'the token is not printed');
    t.equal(res.stderr.trim().split('\n').length, 1, 'one line');
    t.notOk(existsSync(join(dataDir, 'control.db')), 'nothing was started');
  }
});
