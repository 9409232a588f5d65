/**
 * API key format (docs/design.md §5): `svc_beta_` + ≥ 32 base58 characters from a CSPRNG, stored as
 * the SHA-256 hex of the whole key; anything key-shaped in text can be redacted to a stub.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { BASE58_ALPHABET } from '../../protocol/base58';
import { KEY_PREFIX, generateKey, hashKey, isWellFormedKey, keyStub, newId, redactKeys } from '../../protocol/keys';
import { generateOperatorToken, hashOperatorToken, operatorTokenStub } from '../../protocol/operator-token';

const BODY = /^[1-9A-HJ-NP-Za-km-z]+$/;

t.test('1,000 generated keys are well-formed and distinct', async (t) => {
  const keys = Array.from({ length: 1000 }, () => generateKey());
  const bad = keys.filter((k) => {
    const body = k.slice(KEY_PREFIX.length);
    return !k.startsWith('svc_beta_') || body.length < 32 || !BODY.test(body) || !isWellFormedKey(k);
  });
  t.same(bad, [], 'every key is svc_beta_ + at least 32 base58 characters');
  t.equal(new Set(keys).size, 1000, 'no two keys are equal');
  t.equal(new Set(keys.map((k) => k.slice(KEY_PREFIX.length, KEY_PREFIX.length + 8))).size, 1000, 'bodies differ from the start');
  const lengths = new Set(keys.map((k) => k.length - KEY_PREFIX.length));
  t.ok(
    [...lengths].every((n) => n >= 43 && n <= 44),
    `32 random bytes give 43-44 characters (saw ${[...lengths].join(', ')})`,
  );
});

t.test('well-formedness', async (t) => {
  const body = '2'.repeat(40);
  const cases: [string, boolean][] = [
    [`svc_beta_${body}`, true],
    [`svc_beta_${'z'.repeat(32)}`, true],
    [`svc_beta_${'z'.repeat(31)}`, false],
    [`svc_beta_${'z'.repeat(65)}`, false],
    [`svc_live_${body}`, false],
    [`SVC_BETA_${body}`, false],
    [body, false],
    ['', false],
    [`svc_beta_${body.slice(1)}0`, false],
    [`svc_beta_${body.slice(1)}O`, false],
    [`svc_beta_${body.slice(1)}I`, false],
    [`svc_beta_${body.slice(1)}l`, false],
    [`svc_beta_${body} `, false],
    [` svc_beta_${body}`, false],
    [`svc_beta_${body}\n`, false],
  ];
  for (const [value, ok] of cases) t.equal(isWellFormedKey(value), ok, `${JSON.stringify(value)} → ${ok}`);
  t.equal(BASE58_ALPHABET.length, 58);
  t.notOk(/[0OIl]/.test(BASE58_ALPHABET), 'the alphabet has no 0, O, I or l');
});

t.test('the stored hash is the SHA-256 hex of the whole key', async (t) => {
  t.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'known SHA-256 vector');
  const key = generateKey();
  const hash = hashKey(key);
  t.match(hash, /^[0-9a-f]{64}$/, 'lowercase hex, 64 characters');
  t.equal(hash, createHash('sha256').update(key, 'utf8').digest('hex'));
  t.not(hash, hashKey(key.slice(KEY_PREFIX.length)), 'the prefix is part of what is hashed');
  t.not(hash, hashKey(generateKey()), 'different keys, different hashes');
});

t.test('display stub and redaction', async (t) => {
  const key = generateKey();
  const stub = keyStub(key);
  t.equal(stub, key.slice(0, KEY_PREFIX.length + 4), 'the stub is the prefix and four characters');
  t.ok(key.length - stub.length >= 28, 'the stub hides almost all of the key');

  const other = generateKey();
  const text = `issued ${key} and "${other}", auth=Bearer ${key}.`;
  const redacted = redactKeys(text);
  t.notOk(redacted.includes(key), 'the first key is gone');
  t.notOk(redacted.includes(other), 'the second key is gone');
  t.equal(redacted, `issued ${stub}… and "${keyStub(other)}…", auth=Bearer ${stub}….`);
  t.equal(redactKeys('nothing secret here'), 'nothing secret here', 'text without keys is unchanged');
  t.equal(redactKeys('svc_beta_abc'), 'svc_beta_abc', 'too short to be a key: unchanged');

  const token = generateOperatorToken();
  t.match(token, /^svc_op_[1-9A-HJ-NP-Za-km-z]{32,44}$/, "an operator's token: svc_op_ and base58 of 32 bytes");
  t.equal(
    redactKeys(`Bearer ${token} and ${key}`),
    `Bearer ${operatorTokenStub(token)}… and ${stub}…`,
    'operator tokens are cut to their stub too',
  );
  t.equal(operatorTokenStub(token), token.slice(0, 'svc_op_'.length + 4));
  t.equal(hashOperatorToken(token), createHash('sha256').update(token).digest('hex'), 'hashed whole, prefix included');
});

t.test('opaque ids', async (t) => {
  const ids = Array.from({ length: 200 }, () => newId('key'));
  t.ok(
    ids.every((id) => /^key_[1-9A-HJ-NP-Za-km-z]{12}$/.test(id)),
    'key_ + 12 base58 characters',
  );
  t.equal(new Set(ids).size, ids.length, 'distinct');
});
