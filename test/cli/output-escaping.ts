/**
 * svcctl never prints a control character it got from control: a key name stored by an
 * older database with ESC, NUL, CR, BEL and an 8-bit CSI (U+009B) shows as visible `\xNN`
 * escapes in `keys list` and `keys show`, and its right-to-left override, line separator and
 * noncharacters (refused now, as the control characters are) as `\uNNNN` escapes; an error
 * detail holding one is escaped on stderr, and `--json` stays valid JSON that parses back to
 * the exact stored value. Checked on the bytes a real `svcctl` process writes, and in-process.
 */
import t from 'tap';
import { generateKey, hashKey, keyStub, newId } from '../../protocol/keys';
import { runCli, spawnCli } from '../fixtures/cli';
import { startTestControl, type TestControl } from '../fixtures/control';

/**
 * A name as an older version could have stored it: clear screen, NUL, CR, BEL, 8-bit CSI, a
 * right-to-left override, a line separator and two noncharacters.
 */
const EVIL_NAME = 'ops\u001b[2J\u0000agent\rfake\u0007\u009b31m\u202etxt.exe\u2028next\ufffe\u{10ffff}';
/** How it must look on the terminal. */
const SHOWN = 'ops\\x1b[2J\\x00agent\\x0dfake\\x07\\x9b31m\\u202etxt.exe\\u2028next\\ufffe\\u{10ffff}';
// eslint-disable-next-line no-control-regex -- control characters are what the test looks for
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e\u2028\ufffe\u{10ffff}]/u;

/** Store a key the way an older version without the control-character check could have. */
async function insertLegacyKey(control: TestControl): Promise<string> {
  const key = generateKey();
  const id = newId('key');
  await control.handle.ctx.store.keys.insert({
    id,
    name: EVIL_NAME,
    prefix: keyStub(key),
    hash: hashKey(key),
    created_at: Date.now(),
    created_by: 'admin',
    expires_at: null,
    wallet: null,
    endpoints: [],
    limit: null,
    application_id: null,
  });
  return id;
}

t.test('a real svcctl process escapes control characters from control', async (t) => {
  const control = await startTestControl(t);
  const id = await insertLegacyKey(control);
  const env = { SVC_ADMIN_TOKEN: control.adminToken };
  const svcctl = (...args: string[]) => spawnCli(['--control', control.urls.control, ...args], { env });

  const list = await svcctl('keys', 'list');
  t.equal(list.code, 0, list.stderr);
  t.notOk(RAW_CONTROL.test(list.stdout), 'keys list: no raw control character on stdout');
  t.ok(list.stdout.includes(SHOWN), `keys list: the name shows its escapes (${JSON.stringify(list.stdout)})`);
  t.ok(list.stdout.includes(id), 'keys list: the key is listed');

  const show = await svcctl('keys', 'show', id);
  t.equal(show.code, 0, show.stderr);
  t.notOk(RAW_CONTROL.test(show.stdout), 'keys show: no raw control character on stdout');
  t.ok(show.stdout.includes(`name:        ${SHOWN}`), `keys show: the name shows its escapes (${JSON.stringify(show.stdout)})`);

  for (const args of [
    ['keys', 'list', '--json'],
    ['keys', 'show', id, '--json'],
  ]) {
    const json = await svcctl(...args);
    t.equal(json.code, 0, json.stderr);
    t.notOk(RAW_CONTROL.test(json.stdout), `${args.join(' ')}: no raw control character, C1, U+202E, U+2028 or noncharacter`);
    const parsed = JSON.parse(json.stdout);
    const name = args[1] === 'list' ? parsed.keys[0].name : parsed.name;
    t.equal(name, EVIL_NAME, `${args.join(' ')}: valid JSON with the exact stored name`);
  }

  // An error detail from control that carries the characters (the id typed is echoed back).
  const missing = await svcctl('keys', 'show', 'key_\u001b]0;pwned\u0007\u202e');
  t.equal(missing.code, 1);
  t.match(missing.stderr, /svc_not_found/);
  t.notOk(RAW_CONTROL.test(missing.stderr), 'stderr: no raw control character');
  t.ok(missing.stderr.includes('key_\\x1b]0;pwned\\x07\\u202e'), `stderr: the id shows its escapes (${JSON.stringify(missing.stderr)})`);
});

t.test('in-process output (every command shares it) escapes too', async (t) => {
  const control = await startTestControl(t);
  const id = await insertLegacyKey(control);
  const list = await runCli(['keys', 'list'], { control });
  t.equal(list.code, 0, list.stderr);
  t.notOk(RAW_CONTROL.test(list.stdout), 'no raw control character');
  t.ok(list.stdout.includes(SHOWN), 'the name shows its escapes');
  const show = await runCli(['keys', 'show', id, '--json'], { control });
  t.equal(show.json().name, EVIL_NAME, '--json keeps the exact value');
});
