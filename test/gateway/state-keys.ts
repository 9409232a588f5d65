// The gateway's key set as requests see it: `lookup` admits a secret only
// while both it and its key are unexpired; rotation, revocation and replacement through
// deltas; a key's endpoint list, limit and lift come back as sent; a rejected delta changes
// nothing; a key's account comes back as sent, plain or not, and follows upserts; an
// endpoint's billing is kept as `prepaid`.
import t from 'tap';
import { createHash } from 'node:crypto';
import { GatewayState, UpdateRejected } from '../../gateway/state/state';
import type { Delta, SnapshotKey } from '../../protocol/snapshot';

const FLAGS = { beta_gate_enabled: true, maintenance_mode: false };
const LIMITS = { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } };
const ENDPOINT = {
  id: 'echo',
  upstream: 'http://127.0.0.1:9/',
  methods: ['GET' as const],
  timeout_ms: 1000,
  sla_ms: 500,
  price: 0,
  premium: 0,
  headers: {},
};
const NOW = 1_700_000_000_000;

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

function key(id: string, secrets: (string | [string, number | null])[], extra: Partial<SnapshotKey> = {}): SnapshotKey {
  return {
    id,
    secrets: secrets.map((s) => (typeof s === 'string' ? { hash: hashOf(s), expires_at: null } : { hash: hashOf(s[0]), expires_at: s[1] })),
    expires_at: null,
    endpoints: [],
    limit: null,
    lift: null,
    ...extra,
  };
}

function state(...keys: SnapshotKey[]): GatewayState {
  const s = new GatewayState({ version: 1, epoch: 1, flags: FLAGS, limits: LIMITS, endpoints: [ENDPOINT] });
  for (const k of keys) s.putKey(k);
  return s;
}

function delta(s: GatewayState, body: Partial<Delta>): Delta {
  return { type: 'delta', version: s.version + 1, base: s.version, sha256: '0'.repeat(64), ...body };
}

/** Which of `secrets` admit at `now`, as the ids they resolve to (null when refused). */
const resolve = (s: GatewayState, secrets: string[], now = NOW) => secrets.map((x) => s.lookup(hashOf(x), now)?.id ?? null);

t.test('a plain key: hit by its hash, miss for anything else', async (t) => {
  const s = state(key('key_plain', ['alpha']));
  t.equal(s.keyCount, 1);
  t.same(s.lookup(hashOf('alpha'), NOW), {
    id: 'key_plain',
    expiresAt: Infinity,
    endpoints: null,
    limit: null,
    lift: null,
    account: null,
  });
  t.equal(s.lookup(hashOf('beta'), NOW), null, 'unknown secret');
  t.equal(s.lookup(hashOf('alpha').toUpperCase(), NOW), null, 'hashes are lowercase hex only');
  t.equal(s.lookup(hashOf('alpha').slice(0, 63), NOW), null, 'short hash');
  t.equal(s.lookup(hashOf('alpha').slice(0, 63) + 'g', NOW), null, 'not hex');
  t.equal(s.lookup('', NOW), null);
});

t.test('a secret admits until the earlier of its own and its key expiry', async (t) => {
  const s = state(
    key('key_secret_first', [['s1', NOW + 1_000]], { expires_at: NOW + 5_000 }),
    key('key_key_first', [['s2', NOW + 5_000]], { expires_at: NOW + 1_000 }),
    key('key_expiring', ['s3'], { expires_at: NOW + 1_000 }),
  );
  t.same(resolve(s, ['s1', 's2', 's3'], NOW + 999), ['key_secret_first', 'key_key_first', 'key_expiring']);
  t.same(resolve(s, ['s1', 's2', 's3'], NOW + 1_000), [null, null, null], 'expiry is exclusive: refused at the instant');
  t.equal(s.lookup(hashOf('s3'), NOW)?.expiresAt, NOW + 1_000, "a plain key reports its key's expiry");
  t.equal(s.lookup(hashOf('s1'), NOW)?.expiresAt, NOW + 5_000, "not the secret's");
});

t.test('rotation grace: two secrets reach the same key until the old one expires', async (t) => {
  const s = state(key('key_rot', [['old', NOW + 60_000], 'new']));
  t.equal(s.keyCount, 1);
  t.same(resolve(s, ['old', 'new']), ['key_rot', 'key_rot']);
  t.equal(s.lookup(hashOf('old'), NOW), s.lookup(hashOf('new'), NOW), 'one entry for the key');
  t.same(resolve(s, ['old', 'new'], NOW + 60_000), [null, 'key_rot'], 'after the grace only the new secret');
});

t.test('endpoints, limit and lift come back as sent', async (t) => {
  const lift = { count: 500, window_seconds: 60, until: NOW + 3_600_000 };
  const s = state(
    key('key_rich', ['rich'], { endpoints: ['echo', 'other'], limit: { count: 5, window_seconds: 10 }, lift, expires_at: NOW + 9_000 }),
  );
  const k = s.lookup(hashOf('rich'), NOW)!;
  t.equal(k.id, 'key_rich');
  t.same([...k.endpoints!].sort(), ['echo', 'other']);
  t.same(k.limit, { count: 5, windowSeconds: 10 });
  t.same(k.lift, { count: 500, windowSeconds: 60, until: lift.until });
  t.equal(k.expiresAt, NOW + 9_000);
  const long = 'key_' + 'x'.repeat(60);
  const unicode = 'key_é✓😀';
  s.putKey(key(long, ['long']));
  s.putKey(key(unicode, ['uni']));
  t.same(resolve(s, ['long', 'uni']), [long, unicode], 'long and non-ASCII ids round-trip');
});

t.test('a delta revoking a key removes every one of its secrets', async (t) => {
  const s = state(key('key_rot', [['old', NOW + 60_000], 'new']), key('key_other', ['other']));
  s.applyDelta(delta(s, { keys_remove: ['key_rot', 'key_unknown'] }));
  t.equal(s.version, 2);
  t.same(resolve(s, ['old', 'new', 'other']), [null, null, 'key_other']);
  t.equal(s.keyCount, 1);
});

t.test("an upsert replaces a key's secrets: the old hashes stop resolving", async (t) => {
  const s = state(key('key_a', ['a1']), key('key_b', [['b-old', NOW + 1_000], 'b-new']));
  s.applyDelta(delta(s, { keys_upsert: [key('key_a', ['a2']), key('key_b', ['b-newer'], { endpoints: ['echo'] })] }));
  t.same(resolve(s, ['a1', 'a2', 'b-old', 'b-new', 'b-newer']), [null, 'key_a', null, null, 'key_b']);
  t.same([...s.lookup(hashOf('b-newer'), NOW)!.endpoints!], ['echo']);
  s.applyDelta(delta(s, { keys_upsert: [key('key_b', ['b-plain'])] }));
  t.same(resolve(s, ['b-newer', 'b-plain']), [null, 'key_b'], 'restricted → plain');
  t.equal(s.lookup(hashOf('b-plain'), NOW)!.endpoints, null);
  t.equal(s.keyCount, 2);
});

t.test('a delta may move a secret from a removed or replaced key to another', async (t) => {
  const s = state(key('key_a', ['shared']), key('key_b', ['b']));
  s.applyDelta(delta(s, { keys_upsert: [key('key_c', ['shared'])], keys_remove: ['key_a'] }));
  t.same(resolve(s, ['shared', 'b']), ['key_c', 'key_b']);
  s.applyDelta(delta(s, { keys_upsert: [key('key_c', ['c']), key('key_b', ['shared'])] }));
  t.same(resolve(s, ['shared', 'c', 'b']), ['key_b', 'key_c', null]);
  s.applyDelta(delta(s, { keys_upsert: [key('key_d', ['d'])], keys_remove: ['key_d'] }));
  t.equal(s.lookup(hashOf('d'), NOW), null, 'upserted and removed in one delta: removed');
});

t.test('a rejected delta leaves keys, endpoints, flags and version as they were', async (t) => {
  const s = state(key('key_a', ['a']), key('key_b', [['b-old', NOW + 1_000], 'b-new']));
  const before = () => ({
    version: s.version,
    keys: s.keyCount,
    flags: { ...s.flags },
    endpoints: [...s.endpoints.keys()],
    resolved: resolve(s, ['a', 'b-old', 'b-new', 'c']),
  });
  const was = before();
  const badEndpoint = { ...ENDPOINT, id: 'bad', upstream: 'ftp://example.com/' };
  const cases: [string, Partial<Delta>, RegExp][] = [
    [
      'bad endpoint',
      {
        keys_remove: ['key_a'],
        keys_upsert: [key('key_c', ['c'])],
        endpoints_upsert: [badEndpoint],
        flags: { ...FLAGS, maintenance_mode: true },
      },
      /scheme/,
    ],
    [
      'a secret of a key that stays',
      { keys_remove: ['key_a'], keys_upsert: [key('key_c', ['c', 'b-new'])], endpoints_remove: ['echo'] },
      /already belongs to key key_b/,
    ],
    ['one secret for two keys', { keys_upsert: [key('key_c', ['c']), key('key_d', ['c'])], keys_remove: ['key_a'] }, /listed twice/],
    ['a secret listed twice', { keys_upsert: [key('key_c', ['c', 'c'])] }, /listed twice/],
    ['a hash that is not hex', { keys_upsert: [{ ...key('key_c', ['c']), secrets: [{ hash: 'Z'.repeat(64), expires_at: null }] }] }, /hex/],
  ];
  for (const [name, body, reason] of cases) {
    t.throws(() => s.applyDelta(delta(s, body)), reason, name);
    t.same(before(), was, `${name}: nothing changed`);
  }
  t.throws(() => s.putKey(key('key_c', ['a'])), UpdateRejected, 'putKey refuses a secret of another key');
  t.same(before(), was);
});

t.test('removing and putting keys keeps the count', async (t) => {
  const s = state();
  for (let i = 0; i < 100; i++) s.putKey(key(`key_${i}`, [`s${i}`]));
  for (let i = 0; i < 100; i += 2) s.removeKey(`key_${i}`);
  s.removeKey('key_0');
  t.equal(s.keyCount, 50);
  for (let i = 0; i < 100; i += 2) s.putKey(key(`key_${i}`, [`t${i}`, [`u${i}`, NOW + 1]]));
  s.putKey(key('key_1', ['s1']));
  t.equal(s.keyCount, 100);
  for (let i = 0; i < 100; i++) {
    const expected = i % 2 === 0 ? [null, `key_${i}`, `key_${i}`] : [`key_${i}`, null, null];
    t.same(resolve(s, [`s${i}`, `t${i}`, `u${i}`]), expected, `key_${i}`);
  }
});

t.test("a key's account comes back as sent, for plain and other keys, and follows upserts and removals", async (t) => {
  const s = state(
    key('key_p1', ['p1'], { account: 'acc_shared' }),
    key('key_p2', ['p2'], { account: 'acc_shared' }),
    key('key_rot', ['r1', 'r2'], { account: 'acc_rot' }),
    key('key_limited', ['l'], { account: 'acc_lim', limit: { count: 5, window_seconds: 10 } }),
    key('key_none', ['n']),
  );
  const accounts = (secrets: string[]) => secrets.map((x) => s.lookup(hashOf(x), NOW)?.account);
  t.same(accounts(['p1', 'p2', 'r1', 'r2', 'l', 'n']), ['acc_shared', 'acc_shared', 'acc_rot', 'acc_rot', 'acc_lim', null]);
  t.same(resolve(s, ['p1', 'p2', 'r1', 'l', 'n']), ['key_p1', 'key_p2', 'key_rot', 'key_limited', 'key_none'], 'ids unchanged');

  s.applyDelta(
    delta(s, {
      keys_upsert: [
        key('key_p1', ['p1']),
        key('key_none', ['n'], { account: 'acc_new' }),
        key('key_rot', ['r2'], { account: 'acc_other' }),
      ],
      keys_remove: ['key_p2'],
    }),
  );
  t.same(accounts(['p1', 'p2', 'r1', 'r2', 'n']), [null, undefined, undefined, 'acc_other', 'acc_new'], 'after the delta');
  s.putKey(key('key_p2', ['p2b'], { account: 'acc_shared' }));
  t.same(accounts(['p2b']), ['acc_shared'], 'put back after removal');
  t.equal(s.keyCount, 5);
});

t.test('an endpoint is prepaid only with billing prepaid', async (t) => {
  const s = new GatewayState({
    version: 1,
    epoch: 1,
    flags: FLAGS,
    limits: LIMITS,
    endpoints: [ENDPOINT, { ...ENDPOINT, id: 'paid', billing: 'prepaid', premium: 500 }],
  });
  t.equal(s.endpoints.get('echo')!.prepaid, false);
  t.equal(s.endpoints.get('paid')!.prepaid, true);
  s.applyDelta(delta(s, { endpoints_upsert: [{ ...ENDPOINT, id: 'paid', premium: 500 }] }));
  t.equal(s.endpoints.get('paid')!.prepaid, false, 'billing dropped by a delta: postpaid again');
});

t.test('a state holding keys without accounts refuses a delta that makes an endpoint prepaid', async (t) => {
  const prepaid = { ...ENDPOINT, id: 'paid', premium: 100, billing: 'prepaid' as const };
  const legacy = state();
  legacy.applyDelta(delta(legacy, { keys_upsert: [key('key_old', ['old'])] }));
  t.equal(legacy.accountless, true, 'a key came without its account');
  t.throws(() => legacy.applyDelta(delta(legacy, { endpoints_upsert: [prepaid] })), { code: 'SVC_ERR_UPDATE_REJECTED' });
  t.equal(legacy.version, 2, 'the refused delta changed nothing');
  t.notOk(legacy.endpoints.has('paid'));
  legacy.applyDelta(delta(legacy, { endpoints_upsert: [{ ...prepaid, id: 'free', billing: undefined }] }));
  t.ok(legacy.endpoints.has('free'), 'a postpaid endpoint is still taken');

  const current = state();
  current.applyDelta(delta(current, { keys_upsert: [key('key_new', ['new'], { account: 'acc_new' })] }));
  current.applyDelta(delta(current, { endpoints_upsert: [prepaid] }));
  t.equal(current.endpoints.get('paid')?.prepaid, true, "with every key's account, the prepaid endpoint is taken");
  t.throws(
    () => current.applyDelta(delta(current, { keys_upsert: [key('key_bare', ['bare'])], endpoints_upsert: [{ ...prepaid, id: 'paid2' }] })),
    { code: 'SVC_ERR_UPDATE_REJECTED' },
    'nor with a key without its account in the same delta',
  );
});
