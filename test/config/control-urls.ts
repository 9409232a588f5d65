// `controlUrls`, the controls a gateway fails over between: from the config file (a JSON list),
// from `SVC_CONTROL_URLS` (comma-separated, spaces around an entry trimmed, an empty entry
// refused), from repeated `--control` on `svcctl serve gateway`; every entry validated as
// `controlUrl` is; and over `controlUrl` when both are set.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, settingsTable } from '../../config/load';
import { loadSettings } from '../../cli/deps';
import { UsageError } from '../../cli/exit-codes';
import { controlUrlsOf } from '../../gateway/main';

const A = 'http://10.0.0.1:7073';
const B = 'https://ctl-b.example:8443';

function configError(t: Test, fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    t.type(err, ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

t.test('from the config file, as a list', async (t) => {
  const file = join(t.testdir(), 'svc.json');
  writeFileSync(file, JSON.stringify({ controlUrls: [A, B] }));
  t.same(loadConfig({ file, env: {} }).controlUrls, [A, B]);
  t.equal(loadConfig({ env: {} }).controlUrls, undefined, 'unset by default');
});

t.test('from SVC_CONTROL_URLS: comma-separated, the spaces around each entry trimmed', async (t) => {
  t.same(loadConfig({ env: { SVC_CONTROL_URLS: `${A},${B}` } }).controlUrls, [A, B]);
  t.same(loadConfig({ env: { SVC_CONTROL_URLS: ` ${A} ,  ${B} ` } }).controlUrls, [A, B], 'spaces trimmed');
  t.same(loadConfig({ env: { SVC_CONTROL_URLS: A } }).controlUrls, [A], 'one URL is a list of one');
  t.equal(loadConfig({ env: { SVC_CONTROL_URLS: '' } }).controlUrls, undefined, 'empty is unset, like every variable');
  t.equal(settingsTable().find((s) => s.key === 'controlUrls')?.env, 'SVC_CONTROL_URLS', 'listed with its env name');
});

t.test('an empty entry, a bad URL or an empty list is the usual config error', async (t) => {
  for (const [value, what] of <[string, string][]>[
    [`${A},,${B}`, 'an empty entry'],
    [`${A},`, 'a trailing comma'],
    [`${A}, ,${B}`, 'an entry of spaces'],
    [`${A},ftp://x.example`, 'a URL that is not http(s)'],
    [`${A},notaurl`, 'not a URL'],
  ]) {
    const err = configError(t, () => loadConfig({ env: { SVC_CONTROL_URLS: value } }));
    t.equal(err.issues.length, 1, `${what}: one issue`);
    t.equal(err.issues[0]!.key, 'controlUrls', `${what}: names the setting`);
    t.equal(err.issues[0]!.source, 'env SVC_CONTROL_URLS', `${what}: names the variable`);
    t.same(
      err.issues[0]!.value,
      value.split(',').map((v) => v.trim()),
      `${what}: shows the list as read`,
    );
    t.match(err.message, /allowed: a list of http\(s\) URLs/, `${what}: says what is allowed`);
  }
  const file = join(t.testdir(), 'svc.json');
  writeFileSync(file, JSON.stringify({ controlUrls: [] }));
  t.match(configError(t, () => loadConfig({ file, env: {} })).message, `controlUrls (from config file ${file}): []`, 'an empty list');
  writeFileSync(file, JSON.stringify({ controlUrls: A }));
  t.match(configError(t, () => loadConfig({ file, env: {} })).message, 'controlUrls', 'a string where a list belongs');
});

t.test('gateways use controlUrls over controlUrl; controlUrl alone is one control', async (t) => {
  const dataDir = t.testdir();
  const both = loadConfig({ env: { SVC_CONTROL_URL: 'http://127.0.0.1:9', SVC_CONTROL_URLS: `${A},${B}`, SVC_DATA_DIR: dataDir } });
  t.equal(both.controlUrl, 'http://127.0.0.1:9', 'both are kept in the settings');
  t.same(controlUrlsOf(both, dataDir), [A, B], 'the gateway dials the list');
  t.same(controlUrlsOf(loadConfig({ env: { SVC_CONTROL_URL: A } }), dataDir), [A], 'controlUrl as today');
  t.same(controlUrlsOf(loadConfig({ env: {} }), dataDir), ['http://127.0.0.1:7073'], 'neither: the local control port');
});

t.test('--control: repeated on serve gateway, in order; once elsewhere', async (t) => {
  t.same(loadSettings({ control: [A, B] }, {}, {}, { controlList: true }).controlUrls, [A, B], 'serve gateway: each one a control');
  const one = loadSettings({ control: [A] }, { SVC_CONTROL_URLS: B }, {}, { controlList: true });
  t.same(one.controlUrls, [A], 'serve gateway: the flags replace the list from env (flags win)');
  t.equal(loadSettings({ control: [A] }, {}).controlUrl, A, 'another command: controlUrl as today');
  t.equal(loadSettings({ control: [A] }, {}).controlUrls, undefined);
  t.throws(() => loadSettings({ control: [A, B] }, {}), UsageError, 'another command: twice is a usage error');
  t.throws(
    () => loadSettings({ control: [A, 'ftp://x.example'] }, {}, {}, { controlList: true }),
    { name: 'UsageError', message: /invalid setting controlUrls \(from flag --control\)/ },
    'a bad one names --control',
  );
});
