// The fast check of a keys-only delta (`isKeyDelta`) never accepts what zod's `Delta` refuses,
// `parseDelta` gives zod's verdict and message for everything else, and a sealed line is
// verified on its exact text: any change to it, or to its seal, fails the check.
import t from 'tap';
import { createHash } from 'node:crypto';
import { isKeyDelta, parseDelta } from '../../gateway/state/delta-line';
import { Delta, sealDelta, verifySealedLine, type SnapshotKey } from '../../protocol/snapshot';
import { replacements, surplusMembers } from '../fixtures/mutations';

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

const rich: SnapshotKey = {
  id: 'key_rich',
  secrets: [
    { hash: hashOf('a'), expires_at: 1_700_000_000_000 },
    { hash: hashOf('b'), expires_at: null },
  ],
  expires_at: 1_700_000_000_001,
  endpoints: ['echo'],
  limit: { count: 1, window_seconds: 1 },
  lift: { count: 2, window_seconds: 3, until: 0 },
};
const plain: SnapshotKey = {
  id: 'key_plain',
  secrets: [{ hash: hashOf('p'), expires_at: null }],
  expires_at: null,
  endpoints: [],
  limit: null,
  lift: null,
};

t.test('keys-only deltas take the fast path; the rest go to zod', async (t) => {
  const revoke = { type: 'delta', version: 12, base: 11, keys_remove: ['key_gone'], sha256: hashOf('x') };
  t.ok(isKeyDelta(revoke), 'a revocation');
  t.ok(isKeyDelta({ type: 'delta', version: 2, base: 1, keys_upsert: [plain, rich], sha256: hashOf('x') }), 'an issue');
  t.ok(isKeyDelta({ type: 'delta', version: 2, base: 1, sha256: hashOf('x') }), 'no change at all');
  t.same(parseDelta(revoke), { success: true, data: revoke }, 'parsed as it is, not copied');

  const flags = { type: 'delta', version: 3, base: 2, flags: { beta_gate_enabled: true, maintenance_mode: false }, sha256: hashOf('x') };
  t.equal(isKeyDelta(flags), false, 'a flags change is left to zod');
  const viaZod = parseDelta(flags);
  t.equal(viaZod.success, Delta.safeParse(flags).success, 'and zod decides it');

  const bad = parseDelta({ type: 'delta', version: 1, base: 1, sha256: hashOf('x') });
  t.equal(bad.success, false);
  if (!bad.success) t.match(bad.message, /2/, "zod's message says why");
  t.equal(parseDelta(null).success, false);
  t.equal(parseDelta([]).success, false);
});

t.test('the fast check never accepts what zod refuses', async (t) => {
  const valid = { type: 'delta', version: 9, base: 8, keys_upsert: [plain, rich], keys_remove: ['key_x'], sha256: hashOf('x') };
  // Each mutation replaces (or deletes) one value somewhere in the delta.
  const odd: unknown[] = [
    undefined,
    null,
    0,
    1,
    2,
    -1,
    1.5,
    2 ** 53,
    '',
    'x',
    'delta',
    hashOf('z').toUpperCase(),
    hashOf('z').slice(1),
    [],
    [1],
    {},
    true,
  ];
  let compared = 0;
  let fastAccepted = 0;
  for (const { copy, value, path } of replacements(valid, odd)) {
    const fast = isKeyDelta(copy);
    const slow = Delta.safeParse(copy).success;
    compared++;
    if (fast) fastAccepted++;
    if (fast && !slow) t.fail(`fast check accepted ${JSON.stringify(value)} at ${path.join('.')}`);
    t.equal(parseDelta(copy).success, slow, `parseDelta agrees with zod at ${path.join('.')}`);
  }
  for (const { copy, path } of surplusMembers(valid)) {
    t.equal(isKeyDelta(copy), false, `an unknown member at ${path.join('.') || 'top'} leaves the delta to zod`);
  }
  t.ok(compared > 300, `${compared} mutations compared`);
  t.ok(fastAccepted > 0, 'some mutations are still valid and take the fast path');
});

t.test('keys with an account and accounts_funded take the fast path, and it never accepts what zod refuses', async (t) => {
  const funded = {
    type: 'delta',
    version: 9,
    base: 8,
    keys_upsert: [
      { ...plain, account: 'acc_1' },
      { ...rich, account: 'a'.repeat(64) },
    ],
    accounts_funded: ['acc_1', 'acc_2'],
    sha256: hashOf('x'),
  };
  t.ok(Delta.safeParse(funded).success, 'zod takes it');
  t.ok(isKeyDelta(funded), 'and so does the fast check');
  t.ok(isKeyDelta({ type: 'delta', version: 2, base: 1, accounts_funded: [], sha256: hashOf('x') }), 'funded accounts alone');
  const odd: unknown[] = [undefined, null, 0, 1, '', 'x', 'a'.repeat(65), [], [1], ['acc'], {}, true];
  let compared = 0;
  let fastAccepted = 0;
  for (const { copy, value, path } of replacements(funded, odd)) {
    const fast = isKeyDelta(copy);
    const slow = Delta.safeParse(copy).success;
    compared++;
    if (fast) fastAccepted++;
    if (fast && !slow) t.fail(`fast check accepted ${JSON.stringify(value)} at ${path.join('.')}`);
    t.equal(parseDelta(copy).success, slow, `parseDelta agrees with zod at ${path.join('.')}`);
  }
  t.equal(isKeyDelta({ ...funded, keys_upsert: [{ ...plain, account: '' }] }), false, 'an empty account');
  t.equal(isKeyDelta({ ...funded, keys_upsert: [{ ...plain, acount: 'acc_1' }] }), false, 'a seventh member that is not account');
  const { lift: _lift, ...sixWithAccount } = { ...plain, account: 'acc_1' };
  t.equal(isKeyDelta({ ...funded, keys_upsert: [sixWithAccount] }), false, 'six members, account in place of lift');
  t.ok(compared > 200, `${compared} mutations compared`);
  t.ok(fastAccepted > 0, 'some mutations are still valid and take the fast path');
});

t.test('a sealed line verifies on its exact text', async (t) => {
  const { line, sha256 } = sealDelta({ type: 'delta', version: 5, base: 4, keys_remove: ['key_a'] });
  t.equal(verifySealedLine(line), sha256);
  t.equal(sha256, hashOf(line.slice(0, line.lastIndexOf(',"sha256"')) + '}'), 'the seal is the digest of the line without it');
  t.equal(verifySealedLine(line.replace('key_a', 'key_b')), null, 'content changed');
  t.equal(verifySealedLine(line.slice(0, -1)), null, 'cut short');
  t.equal(verifySealedLine(line + ' '), null, 'something after the seal');
  t.equal(verifySealedLine(line.replace(sha256, sha256.toUpperCase())), null, 'the seal in upper case');
  t.equal(verifySealedLine(line.replace(`"sha256":"${sha256}"`, `"sha256":"${sha256.slice(1)}0"`)), null, 'another digest');
  t.equal(verifySealedLine(line.replace(',"sha256"', ',"sha512"')), null, 'another member');
  t.equal(verifySealedLine('{}'), null, 'no seal');
  t.equal(verifySealedLine(''), null);
});
