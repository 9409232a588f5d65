/**
 * Settings: defaults, then file → env → flags with later sources winning, one validation with
 * errors that name the key, its env name and what is allowed, and a frozen result.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import * as D from '../../config/defaults';
import { ConfigError, defaultControlUrl, envName, loadConfig, settingsTable } from '../../config/load';

function configError(t: tap.Test, fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    t.ok(err instanceof ConfigError, `throws ConfigError (got ${(err as Error).name})`);
    return err as ConfigError;
  }
  t.fail('expected a ConfigError');
  return new ConfigError([], '(no error thrown)');
}

t.test('gateway.engine: http-proxy by default, undici by env, file or flag, nothing else', async (t) => {
  t.equal(loadConfig({ env: {} }).gateway.engine, 'http-proxy');
  t.equal(loadConfig({ env: { SVC_GATEWAY_ENGINE: 'undici' } }).gateway.engine, 'undici');
  t.equal(
    loadConfig({ env: { SVC_GATEWAY_ENGINE: 'undici' }, flags: { 'gateway.engine': 'http-proxy' } }).gateway.engine,
    'http-proxy',
    'a flag wins over env',
  );
  const err = configError(t, () => loadConfig({ env: { SVC_GATEWAY_ENGINE: 'Undici' } }));
  t.same(err.issues, [{ key: 'gateway.engine', source: 'env SVC_GATEWAY_ENGINE', value: 'Undici', allowed: 'one of http-proxy, undici' }]);
});

t.test('defaults', async (t) => {
  const c = loadConfig({ env: {} });
  t.equal(c.host, D.DEFAULT_HOST);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.dataDir, './data');
  t.equal(c.gateway.port, 7070);
  t.equal(c.api.port, 7071);
  t.equal(c.indexer.port, 7072);
  t.equal(c.control.port, 7073);
  t.equal(c.logLevel, 'info');
  t.equal(c.limits.keyCount, D.DEFAULT_KEY_LIMIT_COUNT);
  t.equal(c.limits.keyWindowS, D.DEFAULT_KEY_LIMIT_WINDOW_S);
  t.equal(c.endpoints.timeoutMs, D.DEFAULT_UPSTREAM_TIMEOUT_MS);
  t.equal(c.endpoints.slaMs, D.DEFAULT_SLA_MS);
  t.equal(c.gateway.bodyLimitBytes, D.DEFAULT_BODY_LIMIT_BYTES);
  t.equal(c.keys.rotateGraceS, 24 * 3600);
  t.equal(c.adminToken, undefined, 'no admin token unless configured');
  t.equal(c.syncToken, undefined);
  t.equal(c.controlUrl, undefined);
  t.equal(c.databaseUrl, null, 'SQLite unless a database URL is configured');
  t.same(loadConfig(), c, 'no sources at all gives the same defaults');
});

t.test('file, then env, then flags: each overrides the previous', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'svc.json');
  writeFileSync(
    file,
    JSON.stringify({ host: '127.0.0.2', gateway: { port: 1000 }, api: { port: 1001 }, control: { port: 1002 }, dataDir: '/file' }),
  );
  const c = loadConfig({
    file,
    env: { SVC_API_PORT: '2001', SVC_CONTROL_PORT: '2002', SVC_DATA_DIR: '/env', HOME: '/ignored', PORT: '9' },
    flags: { 'control.port': 3002, dataDir: '/flag' },
  });
  t.equal(c.host, '127.0.0.2', 'file only');
  t.equal(c.gateway.port, 1000, 'file only');
  t.equal(c.api.port, 2001, 'env beats file');
  t.equal(c.control.port, 3002, 'flag beats env and file');
  t.equal(c.dataDir, '/flag', 'flag beats env and file');
  t.equal(c.indexer.port, 7072, 'untouched settings keep their default');

  const envOnly = loadConfig({ file, env: { SVC_GATEWAY_PORT: '0' } });
  t.equal(envOnly.gateway.port, 0, 'env 0 beats the file (0 is a value, not absent)');
  const emptyEnv = loadConfig({ file, env: { SVC_GATEWAY_PORT: '' } });
  t.equal(emptyEnv.gateway.port, 1000, 'an empty env value is ignored');
  const flagString = loadConfig({ file, flags: { 'gateway.port': '4000' } });
  t.equal(flagString.gateway.port, 4000, 'flag strings are coerced like env values');
});

t.test('gateway.workers: 1 by default, a count or auto (the CPUs available) from env, file or flag', async (t) => {
  t.equal(loadConfig({ env: {} }).gateway.workers, 1);
  t.equal(loadConfig({ env: { SVC_GATEWAY_WORKERS: '4' } }).gateway.workers, 4);
  t.equal(loadConfig({ env: {}, flags: { 'gateway.workers': '2' } }).gateway.workers, 2, 'flag strings are coerced');
  t.equal(loadConfig({ env: { SVC_GATEWAY_WORKERS: 'auto' } }).gateway.workers, availableParallelism(), 'auto: os.availableParallelism()');
  for (const bad of ['0', '-1', '2.5', 'many', 'AUTO', '1025']) {
    const err = configError(t, () => loadConfig({ env: { SVC_GATEWAY_WORKERS: bad } }));
    t.match(
      err.message,
      /^invalid setting gateway\.workers \(from env SVC_GATEWAY_WORKERS\): .*; allowed: an integer from 1 to 1024, or auto/,
      bad,
    );
  }
  t.equal(loadConfig({ env: { SVC_GATEWAY_WORKERS: '9', SVC_GATEWAY_ID: 'g'.repeat(62) } }).gateway.id, 'g'.repeat(62), 'room for .9');
  const err = configError(t, () => loadConfig({ env: { SVC_GATEWAY_WORKERS: '10', SVC_GATEWAY_ID: 'g'.repeat(62) } }));
  t.same(
    err.issues.map((i) => [i.key, i.source, i.allowed]),
    [['gateway.id', 'env SVC_GATEWAY_ID', 'with gateway.workers 10, 1 to 61 of A-Z a-z 0-9 . _ - (each worker is the gateway <id>.<n>)']],
    "an id too long for its workers' suffix names the id and the rule",
  );
  t.equal(loadConfig({ env: { SVC_GATEWAY_ID: 'g'.repeat(64) } }).gateway.id?.length, 64, 'one worker: the whole 64');
});

t.test('SVC_GATEWAY_PORT=abc names the key, the env var and the range', async (t) => {
  const err = configError(t, () => loadConfig({ env: { SVC_GATEWAY_PORT: 'abc' } }));
  t.match(err.message, 'gateway.port');
  t.match(err.message, 'SVC_GATEWAY_PORT');
  t.match(err.message, '0 to 65535');
  t.match(err.message, '"abc"', 'shows the bad value');
  t.same(
    err.issues.map((i) => [i.key, i.source, i.value]),
    [['gateway.port', 'env SVC_GATEWAY_PORT', 'abc']],
  );
});

t.test('invalid values by table', async (t) => {
  const cases: [NodeJS.ProcessEnv, string, RegExp][] = [
    [{ SVC_GATEWAY_PORT: '70000' }, 'gateway.port', /0 to 65535/],
    [{ SVC_API_PORT: '-1' }, 'api.port', /0 to 65535/],
    [{ SVC_CONTROL_PORT: '80.5' }, 'control.port', /0 to 65535/],
    [{ SVC_INDEXER_PORT: '1e3' }, 'indexer.port', /0 to 65535/],
    [{ SVC_LOG_LEVEL: 'verbose' }, 'logLevel', /debug, info, warn, error/],
    [{ SVC_CONTROL_URL: 'ftp://example.com' }, 'controlUrl', /http/],
    [{ SVC_ADMIN_TOKEN: 'short' }, 'adminToken', /32 to 256/],
    [{ SVC_LIMITS_KEY_COUNT: '0' }, 'limits.keyCount', /from 1 to/],
    [{ SVC_GATEWAY_ID: 'has space' }, 'gateway.id', /A-Z a-z 0-9/],
  ];
  for (const [env, key, allowed] of cases) {
    const name = Object.keys(env)[0]!;
    const err = configError(t, () => loadConfig({ env }));
    t.equal(err.issues[0]?.key, key, `${name}: names ${key}`);
    t.match(err.message, name, `${name}: names the env var`);
    t.match(err.message, allowed, `${name}: says what is allowed`);
  }
  const tiers = configError(t, () => loadConfig({ env: { SVC_TIERS_RELIABLE_BELOW: '0.5', SVC_TIERS_ELEVATED_UP_TO: '0.1' } }));
  t.match(tiers.message, /reliableBelow must not exceed tiers.elevatedUpTo/, 'cross-field rule');
});

t.test('flags: a bad value names the flag; an unknown setting is refused', async (t) => {
  const bad = configError(t, () => loadConfig({ env: {}, flags: { 'gateway.port': 'x' } }));
  t.match(bad.message, 'gateway.port');
  t.match(bad.message, '--gateway-port');
  const unknown = configError(t, () => loadConfig({ env: {}, flags: { 'gateway.prot': 1 } }));
  t.match(unknown.message, 'gateway.prot');
});

t.test('config file problems', async (t) => {
  const dir = t.testdir();

  const missing = join(dir, 'nope.json');
  const m = configError(t, () => loadConfig({ file: missing, env: {} }));
  t.match(m.message, missing, 'names the missing file');
  t.match(m.message, /not found/);

  const broken = join(dir, 'broken.json');
  writeFileSync(broken, '{"gateway": ');
  t.match(configError(t, () => loadConfig({ file: broken, env: {} })).message, broken, 'invalid JSON names the file');

  const list = join(dir, 'list.json');
  writeFileSync(list, '[1,2]');
  t.match(configError(t, () => loadConfig({ file: list, env: {} })).message, /must contain a JSON object/);

  const typo = join(dir, 'typo.json');
  writeFileSync(typo, JSON.stringify({ gatewayPort: 8080 }));
  const top = configError(t, () => loadConfig({ file: typo, env: {} }));
  t.match(top.message, 'gatewayPort', 'an unknown top-level key is named');
  t.match(top.message, /no such setting/);

  const wrongType = join(dir, 'wrong.json');
  writeFileSync(wrongType, JSON.stringify({ gateway: { port: 'eighty' } }));
  const wt = configError(t, () => loadConfig({ file: wrongType, env: {} }));
  t.match(wt.message, 'gateway.port');
  t.match(wt.message, wrongType, 'says the value came from that file');
});

t.test('an unknown nested key in the config file is named, not ignored', async (t) => {
  const file = join(t.testdir(), 'nested.json');
  writeFileSync(file, JSON.stringify({ gateway: { prot: 8080 } }));
  t.throws(() => loadConfig({ file, env: {} }), { name: 'ConfigError', message: /gateway\.prot/ }, 'a typo inside a section is refused');
});

t.test('a rejected token is not echoed in the error', async (t) => {
  // Almost right (a stray space): the rest of it is still a live secret.
  const token = 'svc_admin_4Zx9PqRs7TuVwXyZaBcDeFgHiJkLmNoP ';
  const err = configError(t, () => loadConfig({ env: { SVC_ADMIN_TOKEN: token } }));
  t.match(err.message, 'adminToken', 'the setting is named');
  t.match(err.message, 'SVC_ADMIN_TOKEN');
  t.notOk(err.message.includes(token.trim()), 'the token value is not in the message');
  t.notOk(JSON.stringify(err.issues).includes(token.trim()), 'nor in the structured issues');

  const metrics = 'svc_metrics_4Zx9PqRs7TuVwXyZaBcDeFgHiJkLmNoP x';
  const metricsErr = configError(t, () => loadConfig({ env: { SVC_METRICS_TOKEN: metrics } }));
  t.match(metricsErr.message, 'SVC_METRICS_TOKEN', 'the metrics token setting is named');
  t.notOk(metricsErr.message.includes('4Zx9PqRs7TuVwXyZaBcDeFgHiJkLmNoP'), 'and its value is not in the message');
});

t.test('the result is deeply frozen', async (t) => {
  const c = loadConfig({ env: {} });
  t.ok(Object.isFrozen(c));
  t.ok(Object.isFrozen(c.gateway));
  t.ok(Object.isFrozen(c.limits));
  t.throws(() => {
    (c as { host: string }).host = '0.0.0.0';
  }, TypeError);
  t.throws(() => {
    (c.gateway as { port: number }).port = 1;
  }, TypeError);
  t.equal(c.gateway.port, 7070, 'unchanged');
});

t.test('envName', async (t) => {
  const cases: [string[], string][] = [
    [['gateway', 'port'], 'SVC_GATEWAY_PORT'],
    [['dataDir'], 'SVC_DATA_DIR'],
    [['databaseUrl'], 'SVC_DATABASE_URL'],
    [['host'], 'SVC_HOST'],
    [['controlUrl'], 'SVC_CONTROL_URL'],
    [['adminToken'], 'SVC_ADMIN_TOKEN'],
    [['syncToken'], 'SVC_SYNC_TOKEN'],
    [['metricsToken'], 'SVC_METRICS_TOKEN'],
    [['gateway', 'bodyLimitBytes'], 'SVC_GATEWAY_BODY_LIMIT_BYTES'],
    [['limits', 'keyWindowS'], 'SVC_LIMITS_KEY_WINDOW_S'],
  ];
  for (const [path, name] of cases) t.equal(envName(path), name, `${path.join('.')} → ${name}`);
});

/** A valid value for a numeric setting that differs from its default. */
function otherNumber(n: number): number {
  if (!Number.isInteger(n)) return n / 2;
  return n <= 1 ? n + 1 : n - 1;
}

t.test('settingsTable has one entry per setting', async (t) => {
  const table = settingsTable();
  const keys = table.map((r) => r.key);
  t.equal(new Set(keys).size, keys.length, 'no setting listed twice');
  t.equal(new Set(table.map((r) => r.env)).size, table.length, 'no env name shared');

  // Every leaf of the defaults, plus the settings that have no default.
  const leaves: string[] = [];
  const walk = (value: unknown, path: string[]) => {
    if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    } else leaves.push(path.join('.'));
  };
  walk(loadConfig({ env: {} }), []);
  const expected = [
    ...leaves,
    'adminToken',
    'syncToken',
    'metricsToken',
    'controlUrl',
    'controlUrls',
    'gateway.id',
    'applications.webhookUrl',
    'applications.webhookSecret',
    'applications.marketUrl',
    'pool.minFree',
  ].sort();
  t.same([...keys].sort(), expected, 'exactly the settings the schema has');

  const defaults = loadConfig({ env: {} }) as unknown as Record<string, Record<string, unknown>>;
  for (const row of table) {
    t.equal(row.env, envName(row.key.split('.')), `${row.key}: env name`);
    t.match(row.allowed, /\S/, `${row.key}: says what is allowed`);
    const path = row.key.split('.');
    const value = path.length === 1 ? defaults[path[0]!] : defaults[path[0]!]?.[path[1]!];
    t.same(row.default, value, `${row.key}: default matches`);
  }

  // docs/design.md §2 names these env variables.
  const envs = new Set(table.map((r) => r.env));
  for (const name of [
    'SVC_DATA_DIR',
    'SVC_GATEWAY_PORT',
    'SVC_API_PORT',
    'SVC_INDEXER_PORT',
    'SVC_CONTROL_PORT',
    'SVC_HOST',
    'SVC_CONTROL_URL',
    'SVC_ADMIN_TOKEN',
    'SVC_SYNC_TOKEN',
  ]) {
    t.ok(envs.has(name), `${name} is a setting`);
  }

  // Every listed env name is actually read.
  const sample: Record<string, string> = {
    SVC_HOST: '10.0.0.1',
    SVC_DATA_DIR: '/x',
    SVC_DATABASE_URL: 'postgres://svc@db.example:5432/svc',
    SVC_CONTROL_URL: 'http://c.example:1',
    SVC_ADMIN_TOKEN: 'a'.repeat(40),
    SVC_SYNC_TOKEN: 'b'.repeat(40),
    SVC_METRICS_TOKEN: 'c'.repeat(40),
    SVC_LOG_LEVEL: 'debug',
    SVC_GATEWAY_ID: 'gw-1',
  };
  for (const row of table) {
    const value = sample[row.env] ?? (typeof row.default === 'number' ? String(otherNumber(row.default)) : undefined);
    if (value === undefined) continue;
    const c = loadConfig({ env: { [row.env]: value } }) as unknown as Record<string, Record<string, unknown>>;
    const path = row.key.split('.');
    const got = path.length === 1 ? c[path[0]!] : c[path[0]!]?.[path[1]!];
    t.same(got, typeof row.default === 'number' ? Number(value) : value, `${row.env} sets ${row.key}`);
  }
});

t.test('defaultControlUrl', async (t) => {
  t.equal(defaultControlUrl(loadConfig({ env: {} })), 'http://127.0.0.1:7073');
  t.equal(
    defaultControlUrl(loadConfig({ env: { SVC_HOST: '0.0.0.0', SVC_CONTROL_PORT: '9000' } })),
    'http://127.0.0.1:9000',
    'a wildcard bind is reached on loopback',
  );
  t.equal(defaultControlUrl(loadConfig({ env: { SVC_HOST: '::1' } })), 'http://[::1]:7073', 'IPv6 in brackets');
  t.equal(
    defaultControlUrl(loadConfig({ env: { SVC_CONTROL_URL: 'https://ctl.example' } })),
    'https://ctl.example',
    'an explicit URL wins',
  );
});
