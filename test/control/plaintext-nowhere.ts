/**
 * A key's plaintext leaves control exactly once, in the issue/rotate answer (docs/design.md §5). With
 * control and svcctl as real processes, after issuing and rotating keys, no plaintext is in
 * any file of the data dir (database, WAL, tokens, control.json), control's logs, any other
 * CLI output, or the audit log. The same holds for operators' tokens: once, in the answer to
 * `operators add` or `operators rotate`, and nowhere else, error answers included.
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashKey, isWellFormedKey, keyStub } from '../../protocol/keys';
import { hashOperatorToken, operatorTokenStub } from '../../protocol/operators';
import { runtimeFileExists, spawnCli, spawnControl } from '../fixtures/cli';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Where `needle` occurs among `files` (raw bytes). */
function filesContaining(files: string[], needle: string): string[] {
  const bytes = Buffer.from(needle, 'utf8');
  return files.filter((f) => readFileSync(f).includes(bytes));
}

t.test('plaintext keys are nowhere but the issue and rotate answers', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const control = await spawnControl(t, { dataDir });
  const cli = (...args: string[]) => spawnCli(['--data-dir', dataDir, ...args]);

  // Issue three keys (two as JSON, one with human output) and rotate two of them.
  const keys: { id: string; key: string; source: string }[] = [];
  for (const name of ['alpha', 'beta']) {
    const res = await cli('keys', 'issue', '--name', name, '--json');
    t.equal(res.code, 0, `issue ${name}: exit 0 (${res.stderr})`);
    const body = JSON.parse(res.stdout);
    t.ok(isWellFormedKey(body.key), `issue ${name}: the answer holds the key`);
    keys.push({ id: body.id, key: body.key, source: res.stdout });
  }
  const human = await cli('keys', 'issue', '--name', 'gamma');
  t.equal(human.code, 0, 'human issue: exit 0');
  const humanKey = /svc_beta_[1-9A-HJ-NP-Za-km-z]{32,}/.exec(human.stdout)?.[0] ?? '';
  const humanId = /Issued (key_\S+?)\./.exec(human.stdout)?.[1] ?? '';
  t.ok(isWellFormedKey(humanKey), 'human output prints the key');
  t.equal(human.stdout.split(humanKey).length - 1, 1, 'exactly once');
  keys.push({ id: humanId, key: humanKey, source: human.stdout });

  const rotated = await cli('keys', 'rotate', keys[0]!.id, '--grace', '1h', '--json');
  t.equal(rotated.code, 0, `rotate --json: exit 0 (${rotated.stderr})`);
  const rotatedBody = JSON.parse(rotated.stdout);
  keys.push({ id: rotatedBody.id, key: rotatedBody.key, source: rotated.stdout });
  const rotatedHuman = await cli('keys', 'rotate', humanId, '--grace', '0');
  t.equal(rotatedHuman.code, 0, 'rotate (human): exit 0');
  const rotatedHumanKey = /svc_beta_[1-9A-HJ-NP-Za-km-z]{32,}/.exec(rotatedHuman.stdout)?.[0] ?? '';
  t.ok(isWellFormedKey(rotatedHumanKey), 'human rotate prints the new key');
  keys.push({ id: humanId, key: rotatedHumanKey, source: rotatedHuman.stdout });

  t.equal(new Set(keys.map((k) => k.key)).size, 5, 'five distinct plaintexts');
  // The search works: each key is found where it must be.
  for (const k of keys) t.ok(k.source.includes(k.key), `${keyStub(k.key)}… is found in its own issue/rotate output`);

  // Every other output.
  const outputs: [string, string][] = [];
  const record = async (label: string, ...args: string[]) => {
    const res = await cli(...args);
    t.equal(res.code, 0, `${label}: exit 0 (${res.stderr})`);
    outputs.push([label, res.stdout + res.stderr]);
  };
  await record('keys list --json', 'keys', 'list', '--json');
  await record('keys list', 'keys', 'list');
  for (const id of new Set(keys.map((k) => k.id))) {
    await record(`keys show ${id} --json`, 'keys', 'show', id, '--json');
    await record(`keys show ${id}`, 'keys', 'show', id);
  }
  await record('status --json', 'status', '--json');
  await record('status', 'status');

  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const audit = await fetch(`${control.urls.control}/_admin/v1/audit?limit=10000`, { headers: { authorization: `Bearer ${adminToken}` } });
  t.equal(audit.status, 200);
  const auditText = await audit.text();
  const auditEntries = JSON.parse(auditText).entries as { action: string }[];
  t.equal(
    auditEntries.filter((e) => /^keys\.(issue|rotate)$/.test(e.action)).length,
    5,
    'the audit log has the three issues and two rotations',
  );
  outputs.push(['audit log', auditText]);

  const listed = JSON.parse(outputs[0]![1]);
  t.equal(listed.keys.length, 3, 'the list shows the three keys (so it was read)');

  for (const k of keys) {
    for (const [label, text] of outputs) {
      t.notOk(text.includes(k.key), `${keyStub(k.key)}… not in ${label}`);
    }
  }

  // The data dir while control runs: database, WAL, shared memory, tokens, control.json.
  const running = filesUnder(dataDir);
  const names = running.map((f) => f.slice(dataDir.length + 1)).sort();
  for (const expected of ['admin.token', 'control.db', 'control.json', 'sync.token']) {
    t.ok(names.includes(expected), `${expected} is scanned`);
  }
  t.ok(names.includes('control.db-wal'), 'the WAL is scanned');
  for (const k of keys) {
    t.same(filesContaining(running, k.key), [], `${keyStub(k.key)}… in no file`);
    t.same(filesContaining(running, k.key.slice(keyStub(k.key).length)), [], `${keyStub(k.key)}…: its secret part in no file`);
    // The scan reads the stored data: the key's hash is there.
    t.ok(filesContaining(running, hashKey(k.key)).length > 0, `${keyStub(k.key)}…: its hash is found in the database files`);
  }

  // Control's logs.
  const logs = control.stderr() + control.stdout();
  t.match(logs, /control ready/, 'the logs were captured');
  for (const k of keys) t.notOk(logs.includes(k.key), `${keyStub(k.key)}… not in control's logs or banner`);
  t.notOk(logs.includes(adminToken), 'the admin token is not in the logs or banner either');

  // Stop: exit 0, control.json gone, and the checkpointed database still holds no plaintext.
  const stopped = await control.stop('SIGTERM');
  t.same(stopped, { code: 0, signal: null }, 'SIGTERM: exit 0');
  t.notOk(runtimeFileExists(dataDir), 'control.json removed on stop');
  const after = filesUnder(dataDir);
  for (const k of keys) t.same(filesContaining(after, k.key), [], `${keyStub(k.key)}… in no file after shutdown`);
  t.ok(filesContaining(after, hashKey(keys[0]!.key)).length > 0, 'the database still holds the hashes');
});

t.test('operator tokens are nowhere but the add and rotate answers', async (t) => {
  const root = t.testdir();
  const dataDir = join(root, 'data');
  const control = await spawnControl(t, { dataDir });
  const cli = (...args: string[]) => spawnCli(['--data-dir', dataDir, ...args]);
  const TOKEN = /svc_op_[1-9A-HJ-NP-Za-km-z]{32,}/;

  const tokens: { name: string; token: string; source: string }[] = [];
  const added = await cli('operators', 'add', 'alice', '--scopes', 'read,keys', '--json');
  t.equal(added.code, 0, `add --json: exit 0 (${added.stderr})`);
  tokens.push({ name: 'alice', token: JSON.parse(added.stdout).token, source: added.stdout });
  const human = await cli('operators', 'add', 'bob', '--scopes', 'read');
  t.equal(human.code, 0, 'add (human): exit 0');
  const bobToken = TOKEN.exec(human.stdout)?.[0] ?? '';
  t.equal(human.stdout.split(bobToken).length - 1, 1, 'the human add prints the token exactly once');
  tokens.push({ name: 'bob', token: bobToken, source: human.stdout });
  const rotated = await cli('operators', 'rotate', 'alice', '--grace', '1h', '--json');
  t.equal(rotated.code, 0, `rotate --json: exit 0 (${rotated.stderr})`);
  tokens.push({ name: 'alice', token: JSON.parse(rotated.stdout).token, source: rotated.stdout });
  const rotatedHuman = await cli('operators', 'rotate', 'bob');
  t.equal(rotatedHuman.code, 0, 'rotate (human): exit 0');
  tokens.push({ name: 'bob', token: TOKEN.exec(rotatedHuman.stdout)?.[0] ?? '', source: rotatedHuman.stdout });
  t.equal(new Set(tokens.map((k) => k.token)).size, 4, 'four distinct tokens');
  for (const k of tokens) t.ok(k.source.includes(k.token) && TOKEN.test(k.token), `${operatorTokenStub(k.token)}… is in its own answer`);

  // Each token used: what its scopes allow, what they do not (403), and a dead one (401).
  const fileOf = (i: number): string => {
    const file = join(root, `token-${i}`);
    writeFileSync(file, tokens[i]!.token + '\n', { mode: 0o600 });
    return file;
  };
  const outputs: [string, string][] = [];
  const record = async (label: string, code: number, ...args: string[]) => {
    const res = await cli(...args);
    t.equal(res.code, code, `${label}: exit ${code} (${res.stderr})`);
    outputs.push([label, res.stdout + res.stderr]);
  };
  await record('keys issue as alice', 0, '--token-file', fileOf(2), 'keys', 'issue', '--name', 'by alice', '--json');
  await record('flag set as alice (403)', 1, '--token-file', fileOf(2), 'flag', 'set', 'maintenance_mode', 'on');
  await record('status as bob, rotated out (401)', 1, '--token-file', fileOf(1), 'status');
  await record('operators revoke bob', 0, 'operators', 'revoke', 'bob');
  await record('status as bob, revoked (401)', 1, '--token-file', fileOf(3), 'status');
  await record('operators list --json', 0, 'operators', 'list', '--json');
  await record('operators list', 0, 'operators', 'list');
  await record('audit list --json', 0, 'audit', 'list', '--json', '--limit', '10000');
  await record('audit list', 0, 'audit', 'list', '--limit', '10000');
  await record('status --json', 0, 'status', '--json');
  t.match(outputs[1]![1], /svc_forbidden_scope/, 'the refusal was a scope refusal');
  t.match(outputs[2]![1], /svc_unauthorized/, 'the rotated-out token was refused');
  t.match(outputs[4]![1], /svc_unauthorized/, 'the revoked one too');

  // Error bodies as the API sends them, with each token presented.
  for (const [i, k] of tokens.entries()) {
    for (const path of ['/_admin/v1/status', '/_admin/v1/flags/maintenance_mode', '/_admin/v1/nope']) {
      const res = await fetch(`${control.urls.control}${path}`, { method: 'PUT', headers: { authorization: `Bearer ${k.token}` } });
      outputs.push([`PUT ${path} with token ${i}`, await res.text()]);
    }
  }
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const audit = await fetch(`${control.urls.control}/_admin/v1/audit?limit=10000`, { headers: { authorization: `Bearer ${adminToken}` } });
  const auditText = await audit.text();
  t.same(
    (JSON.parse(auditText).entries as { action: string; actor: string }[])
      .filter((e) => e.action.startsWith('operators.'))
      .map((e) => `${e.actor} ${e.action}`)
      .sort(),
    ['root operators.add', 'root operators.add', 'root operators.revoke', 'root operators.rotate', 'root operators.rotate'],
    'the audit log has every operator change',
  );
  outputs.push(['audit log', auditText]);

  for (const k of tokens) {
    for (const [label, text] of outputs) t.notOk(text.includes(k.token), `${operatorTokenStub(k.token)}… not in ${label}`);
  }

  const files = filesUnder(dataDir);
  for (const k of tokens) {
    t.same(filesContaining(files, k.token), [], `${operatorTokenStub(k.token)}… in no file of the data dir`);
    t.same(filesContaining(files, k.token.slice('svc_op_'.length)), [], `${operatorTokenStub(k.token)}…: its secret part in no file`);
    t.ok(filesContaining(files, hashOperatorToken(k.token)).length > 0, `${operatorTokenStub(k.token)}…: its hash is in the database`);
  }
  const logs = control.stderr() + control.stdout();
  for (const k of tokens) t.notOk(logs.includes(k.token), `${operatorTokenStub(k.token)}… not in control's logs`);
  t.same(await control.stop('SIGTERM'), { code: 0, signal: null });
  const after = filesUnder(dataDir);
  for (const k of tokens) t.same(filesContaining(after, k.token), [], `${operatorTokenStub(k.token)}… in no file after shutdown`);
});
