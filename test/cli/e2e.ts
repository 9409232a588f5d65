/**
 * The built CLI as real processes: a bad setting stops `serve control` with exit 2 and a
 * message naming the key; `serve control` on port 0 prints its URLs, bootstraps the data dir
 * with 0600 tokens, answers /health on both public listeners, is found by `svcctl` through
 * the data dir, and exits 0 on SIGTERM.
 */
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runtimeFileExists, spawnCli, spawnControl } from '../fixtures/cli';
import { controlListenArgs } from '../fixtures/stack';
import { closedPort } from '../fixtures/upstream';

t.test('a bad port in the environment is a usage error naming the setting', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const res = await spawnCli(['serve', 'control', '--data-dir', dataDir], { env: { SVC_GATEWAY_PORT: 'abc' }, cwd: dir });
  t.equal(res.code, 2, 'exit 2');
  t.match(res.stderr, 'gateway.port');
  t.match(res.stderr, 'SVC_GATEWAY_PORT');
  t.match(res.stderr, '0 to 65535', 'the allowed range');
  t.equal(res.stderr.trim().split('\n').length, 1, 'one line, no stack trace');
  t.notOk(existsSync(join(dataDir, 'control.db')), 'nothing was bootstrapped');

  const flag = await spawnCli(['serve', 'control', '--data-dir', dataDir, '--control-port', '99999'], { cwd: dir });
  t.equal(flag.code, 2, 'a bad port flag: exit 2');
  t.match(flag.stderr, 'control.port');
  t.match(flag.stderr, '--control-port');
});

t.test('a bad --control (or --id) names the flag as typed; only serve gateway takes several', async (t) => {
  const dir = t.testdir();
  for (const [value, args] of [
    ['notaurl', ['keys', 'list']],
    ['ftp://127.0.0.1:7073', ['status']],
  ] as const) {
    const res = await spawnCli(['--control', value, ...args], { env: { SVC_ADMIN_TOKEN: 'x'.repeat(32) }, cwd: dir });
    t.equal(res.code, 2, `--control ${value}: exit 2`);
    t.match(res.stderr, /\(from flag --control\)/, `--control ${value}: names --control`);
    t.notMatch(res.stderr, '--control-url', `--control ${value}: not the derived name --control-url`);
    t.match(res.stderr, JSON.stringify(value), 'shows the bad value');
    t.equal(res.stderr.trim().split('\n').length, 1, 'one line');
  }
  const after = await spawnCli(['keys', 'list', '--control', 'notaurl'], { env: { SVC_ADMIN_TOKEN: 'x'.repeat(32) }, cwd: dir });
  t.equal(after.code, 2, 'after the subcommand too: exit 2');
  t.match(after.stderr, /\(from flag --control\)/);

  const listed = await spawnCli(
    ['serve', 'gateway', '--data-dir', join(dir, 'data'), '--control', 'http://127.0.0.1:1', '--control', 'ftp://x'],
    {
      cwd: dir,
    },
  );
  t.equal(listed.code, 2, 'serve gateway with a bad one of several --control: exit 2');
  t.match(
    listed.stderr,
    'invalid setting controlUrls (from flag --control): ["http://127.0.0.1:1","ftp://x"]',
    'names --control, shows the list',
  );
  const twice = await spawnCli(['--control', 'http://127.0.0.1:1', '--control', 'http://127.0.0.1:2', 'keys', 'list'], {
    env: { SVC_ADMIN_TOKEN: 'x'.repeat(32) },
    cwd: dir,
  });
  t.equal(twice.code, 2, 'another command with --control twice: exit 2');
  t.match(twice.stderr, '--control may be given once');

  const env = await spawnCli(['keys', 'list'], { env: { SVC_CONTROL_URL: 'notaurl', SVC_ADMIN_TOKEN: 'x'.repeat(32) }, cwd: dir });
  t.equal(env.code, 2, 'from the environment: exit 2');
  t.match(env.stderr, 'env SVC_CONTROL_URL', 'names the variable, not a flag');

  const id = await spawnCli(['serve', 'gateway', '--data-dir', join(dir, 'data'), '--id', 'bad id!'], { cwd: dir });
  t.equal(id.code, 2, 'serve gateway --id with a bad value: exit 2');
  t.match(id.stderr, /\(from flag --id\)/, 'names --id');
  t.notMatch(id.stderr, '--gateway-id');
});

t.test('an unknown gateway engine stops start-up with exit 2, whichever way it is given', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  for (const [what, args, env, source] of [
    ['serve gateway --engine', ['serve', 'gateway', '--data-dir', dataDir, '--engine', 'nginx'], {}, '(from flag --engine)'],
    ['up --engine', ['up', '--data-dir', dataDir, '--engine', 'nginx'], {}, '(from flag --engine)'],
    ['SVC_GATEWAY_ENGINE', ['serve', 'gateway', '--data-dir', dataDir], { SVC_GATEWAY_ENGINE: 'nginx' }, '(from env SVC_GATEWAY_ENGINE)'],
  ] as const) {
    const res = await spawnCli([...args], { env, cwd: dir });
    t.equal(res.code, 2, `${what}: exit 2`);
    t.match(res.stderr, 'invalid setting gateway.engine', `${what}: names the setting`);
    t.match(res.stderr, source, `${what}: names where it came from`);
    t.match(res.stderr, '"nginx"', `${what}: shows the bad value`);
    t.match(res.stderr, 'one of http-proxy, undici', `${what}: lists the engines`);
    t.equal(res.stderr.trim().split('\n').length, 1, `${what}: one line`);
  }
  t.notOk(existsSync(dataDir), 'nothing was started');
});

t.test('a bad database URL stops serve control and up with exit 2, its password never printed', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const password = 'Hunter2-9f3k';
  const file = join(dir, 'svc.json');
  writeFileSync(file, JSON.stringify({ databaseUrl: `postgres://svc:${password}@` }));
  for (const [what, args, env, source, shown] of [
    [
      'serve control --database-url',
      ['serve', 'control', '--data-dir', dataDir, '--database-url', `mysql://svc:${password}@db.example/svc`],
      {},
      '(from flag --database-url)',
      '"mysql://svc:***@db.example/svc"',
    ],
    [
      'up --database-url',
      ['up', '--data-dir', dataDir, '--database-url', `postgres:svc:${password}@db.example/svc`],
      {},
      '(from flag --database-url)',
      '"(not a URL; not shown)"',
    ],
    [
      'SVC_DATABASE_URL',
      ['serve', 'control', '--data-dir', dataDir],
      { SVC_DATABASE_URL: `http://svc:${password}@db.example/svc` },
      '(from env SVC_DATABASE_URL)',
      '"http://svc:***@db.example/svc"',
    ],
    ['the config file', ['--config', file, 'up', '--data-dir', dataDir], {}, `(from config file ${file})`, '"(not a URL; not shown)"'],
  ] as const) {
    const res = await spawnCli([...args], { env, cwd: dir });
    t.equal(res.code, 2, `${what}: exit 2`);
    t.match(res.stderr, `invalid setting databaseUrl ${source}: ${shown}`, `${what}: names the setting and its source, masked`);
    t.match(res.stderr, 'postgres:// or postgresql://', `${what}: says what is allowed`);
    t.equal(res.stderr.trim().split('\n').length, 1, `${what}: one line`);
    t.notMatch(res.stdout + res.stderr, password, `${what}: the password is not printed`);
  }
  t.notOk(existsSync(dataDir), 'nothing was started');
});

t.test('serve control with a PostgreSQL URL this build cannot open: exit 1, the URL masked in every line', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const password = 'Hunter2-9f3k';
  for (const [what, args, env] of [
    ['--database-url', ['--database-url', `postgres://svc:${password}@127.0.0.1:1/svc`], {}],
    ['SVC_DATABASE_URL', [], { SVC_DATABASE_URL: `postgres://svc:${password}@127.0.0.1:1/svc`, SVC_LOG_LEVEL: 'debug' }],
  ] as const) {
    const res = await spawnCli(['serve', 'control', '--data-dir', dataDir, ...controlListenArgs(), ...args], { env, cwd: dir });
    t.equal(res.code, 1, `${what}: exit 1`);
    t.match(res.stderr, 'PostgreSQL store at postgres://svc:***@127.0.0.1:1/svc: connect ECONNREFUSED', `${what}: says why`);
    t.notMatch(res.stdout + res.stderr, password, `${what}: the password is in no output or log line`);
    t.notOk(existsSync(join(dataDir, 'control.db')), `${what}: no SQLite database instead`);
  }
});

t.test('serve control: URLs, tokens, health, discovery, SIGTERM', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'fresh', 'data');
  const control = await spawnControl(t, { dataDir, cwd: dir });

  for (const url of Object.values(control.urls)) t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, `${url} is printed`);
  t.equal(new Set(Object.values(control.urls)).size, 3, 'three distinct listeners');
  t.match(control.stdout(), dataDir, 'the banner names the data dir');

  const runtime = JSON.parse(readFileSync(join(dataDir, 'control.json'), 'utf8'));
  t.same(runtime.urls, control.urls, 'control.json publishes the same URLs');
  t.equal(runtime.pid, control.child.pid);

  for (const file of ['admin.token', 'sync.token']) {
    const path = join(dataDir, file);
    t.ok(existsSync(path), `${file} created`);
    t.equal(statSync(path).mode & 0o777, 0o600, `${file} has mode 0600`);
    t.ok(readFileSync(path, 'utf8').trim().length >= 32, `${file} holds a token`);
  }
  t.equal(statSync(dataDir).mode & 0o777, 0o700, 'the data dir is created 0700');
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  t.not(adminToken, readFileSync(join(dataDir, 'sync.token'), 'utf8').trim(), 'admin and sync tokens differ');
  t.notOk(control.stdout().includes(adminToken), 'the banner does not print the token itself');

  for (const [name, base] of [
    ['api', control.urls.api],
    ['indexer', control.urls.indexer],
  ] as const) {
    const res = await fetch(`${base}/health`);
    t.equal(res.status, 200, `${name} /health: 200`);
    t.match(res.headers.get('content-type') ?? '', /^application\/json/);
    t.equal(await res.text(), '{"status":"ok","version":"v1"}', `${name} /health body is exactly the contract`);
  }

  // svcctl finds control and the token through the data dir alone.
  const issued = await spawnCli(['--data-dir', dataDir, 'keys', 'issue', '--json'], { cwd: dir });
  t.equal(issued.code, 0, `keys issue: exit 0 (${issued.stderr})`);
  const body = JSON.parse(issued.stdout);
  t.match(body.key, /^svc_beta_[1-9A-HJ-NP-Za-km-z]{32,}$/);
  t.match(body.id, /^key_/);
  const status = await spawnCli(['--data-dir', dataDir, 'status', '--json'], { cwd: dir });
  t.equal(status.code, 0);
  t.equal(JSON.parse(status.stdout).counts.keys_total, 1, 'the key landed in this control');

  // SVC_ADMIN_TOKEN and --control work without any data dir.
  const viaEnv = await spawnCli(['--control', control.urls.control, 'keys', 'list', '--json'], {
    cwd: dir,
    env: { SVC_ADMIN_TOKEN: adminToken },
  });
  t.equal(viaEnv.code, 0, `SVC_ADMIN_TOKEN + --control: exit 0 (${viaEnv.stderr})`);
  t.equal(JSON.parse(viaEnv.stdout).keys.length, 1);

  const stopped = await control.stop('SIGTERM');
  t.same(stopped, { code: 0, signal: null }, 'SIGTERM: exit 0');
  t.notOk(runtimeFileExists(dataDir), 'control.json removed');

  // Without control.json svcctl falls back to host and control port: a port nothing listens on,
  // never the default, which another svc on this machine may be using.
  const down = await spawnCli(['--data-dir', dataDir, 'keys', 'list'], { cwd: dir, env: { SVC_CONTROL_PORT: String(await closedPort()) } });
  t.equal(down.code, 1, 'with control stopped: exit 1');
  t.match(down.stderr, 'control not reachable at');
  t.match(down.stderr, 'svcctl up');
});

t.test('a second start reuses the tokens and the database', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const first = await spawnControl(t, { dataDir, cwd: dir });
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8');
  const issued = await spawnCli(['--data-dir', dataDir, 'keys', 'issue', '--json'], { cwd: dir });
  t.equal(issued.code, 0);
  t.same(await first.stop(), { code: 0, signal: null });

  const second = await spawnControl(t, { dataDir, cwd: dir });
  t.match(second.stdout(), /admin token\s+\S+admin\.token\s*$/m, 'the banner does not claim a new token');
  t.equal(readFileSync(join(dataDir, 'admin.token'), 'utf8'), token, 'same admin token');
  const list = await spawnCli(['--data-dir', dataDir, 'keys', 'list', '--json'], { cwd: dir });
  t.same(
    JSON.parse(list.stdout).keys.map((k: { id: string }) => k.id),
    [JSON.parse(issued.stdout).id],
    'the key survived the restart',
  );
  t.same(await second.stop('SIGINT'), { code: 0, signal: null }, 'SIGINT also exits 0');
});
