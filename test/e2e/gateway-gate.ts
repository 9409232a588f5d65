/**
 * The beta gate through a real gateway process (docs/design.md §3.3): with `beta_gate_enabled` on,
 * both path forms refuse a missing, malformed, unknown, revoked, expired or rotated-out key
 * with 403 `svc_auth_not_in_beta` and admit a valid one; a key limited to some endpoints gets
 * `svc_endpoint_not_granted` elsewhere. With the gate off keyless calls pass and their outcome
 * has `key_id` null. No refusal reaches the upstream, echoes the key or records an outcome.
 */
import t from 'tap';
import { GENEROUS_LIMITS, assertProblem, drained, request, startStack, waitFor, type HttpResult } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';
import { generateKey } from '../../protocol/keys';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

t.test('gate', async (t) => {
  const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS });
  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'alpha', upstream: `${up.url}/alpha` });
  await stack.addEndpoint({ id: 'beta', upstream: `${up.url}/beta` });
  const valid = await stack.issueKey({ name: 'valid' });
  const alphaOnly = await stack.issueKey({ name: 'alpha only', endpoints: ['alpha'] });
  const revoked = await stack.issueKey({ name: 'revoked' });
  const rotated = await stack.issueKey({ name: 'rotated' });
  await stack.setFlag('beta_gate_enabled', true);
  // Issued last, so it is checked while still valid well within its 2 s.
  const expiring = await stack.issueKey({ name: 'expiring', expires_in_seconds: 2 });
  await stack.applied(expiring.version);
  const gw = stack.gateway;
  /** Call ids of every admitted call, to compare with control's outcomes at the end. */
  const admitted = new Map<string, string | null>();
  const call = async (path: string, key: string | null, headers: Record<string, string> = {}): Promise<HttpResult> => {
    const res = await request(gw, path, { body: '{}', headers: { ...(key === null ? {} : bearer(key)), ...headers } });
    const id = res.headers['x-svc-call-id'];
    if (typeof id === 'string') admitted.set(id, path);
    return res;
  };

  await t.test('keys that still work before they are revoked, expire or rotate', async (t) => {
    for (const k of [expiring, revoked, rotated]) t.equal((await call('/v1/alpha/x', k.key)).status, 200, `${k.id} admitted while valid`);
  });

  const revoke = await stack.admin('POST', `/_admin/v1/keys/${revoked.id}/revoke`);
  t.equal(revoke.status, 200);
  const rotate = await stack.admin('POST', `/_admin/v1/keys/${rotated.id}/rotate`, { grace_seconds: 0 });
  t.equal(rotate.status, 200);
  await stack.applied(rotate.body.version);

  await t.test('a valid key passes on both path forms', async (t) => {
    const before = up.requests.length;
    for (const path of ['/v1/alpha/x', '/alpha/x', '/v1/beta/y', '/beta/y']) {
      const res = await call(path, valid.key);
      t.equal(res.status, 200, `${path}: 200`);
      t.equal(res.headers['x-svc-outcome'], 'ok');
    }
    t.equal((await call('/v1/alpha/x', rotate.body.key)).status, 200, 'the rotated key’s new secret works');
    t.equal(up.requests.length - before, 5, 'each admitted call reached the upstream');
  });

  await t.test('missing, malformed, unknown, revoked, expired and rotated-out keys are 403 svc_auth_not_in_beta', async (t) => {
    // The gateway's own clock decides when the key has expired: wait until it says so.
    await waitFor(async () => (await call('/v1/alpha/x', expiring.key)).status === 403, 'the expiring key to expire');
    const unknown = generateKey();
    const cases: [string, Record<string, string>, string | null][] = [
      ['no Authorization', {}, null],
      ['empty bearer', { authorization: 'Bearer ' }, null],
      ['not a key', { authorization: 'Bearer not-a-key' }, 'not-a-key'],
      ['key-shaped but too short', { authorization: 'Bearer svc_beta_abc' }, 'svc_beta_abc'],
      ['wrong prefix', { authorization: `Bearer ${valid.key.replace('svc_beta_', 'svc_live_')}` }, valid.key.slice(9)],
      ['valid key without Bearer', { authorization: valid.key }, valid.key],
      ['valid key as Basic', { authorization: `Basic ${valid.key}` }, valid.key],
      ['valid key in another header', { 'x-api-key': valid.key }, valid.key],
      ['unknown well-formed key', bearer(unknown), unknown],
      ['revoked key', bearer(revoked.key), revoked.key],
      ['expired key', bearer(expiring.key), expiring.key],
      ['rotated-out secret (grace 0)', bearer(rotated.key), rotated.key],
    ];
    const before = up.requests.length;
    for (const [what, headers, secret] of cases) {
      for (const path of ['/v1/alpha/x', '/alpha/x']) {
        const res = await call(path, null, headers);
        assertProblem(t, res, 403, 'svc_auth_not_in_beta', `${what} on ${path}`);
        t.equal(res.headers['x-svc-call-id'], undefined, 'a refusal gets no call id');
        if (secret !== null) t.notOk(res.text.includes(secret), `${what}: the problem body does not echo the key`);
      }
    }
    t.equal(up.requests.length, before, 'no refused call reached the upstream');
  });

  await t.test('a key limited to one endpoint is 403 svc_endpoint_not_granted on another', async (t) => {
    const before = up.requests.length;
    for (const path of ['/v1/beta/y', '/beta/y']) {
      const res = await call(path, alphaOnly.key);
      assertProblem(t, res, 403, 'svc_endpoint_not_granted', path);
      t.notOk(res.text.includes(alphaOnly.key), 'the body does not echo the key');
    }
    t.equal(up.requests.length, before, 'not forwarded');
    t.equal((await call('/alpha/x', alphaOnly.key)).status, 200, 'the granted endpoint works');
    t.same(
      up.requests.slice(before).map((r) => r.url),
      ['/alpha/x'],
    );
  });

  await t.test('gate off: keyless calls pass and are attributed to no key', async (t) => {
    await stack.applied(await stack.setFlag('beta_gate_enabled', false));
    const keyless = await call('/v1/alpha/free', null);
    t.equal(keyless.status, 200, 'keyless call admitted');
    const keyed = await call('/v1/alpha/mine', valid.key);
    t.equal(keyed.status, 200);
    await drained(gw);
    const rows = new Map(stack.outcomes().map((r) => [r.call_id, r]));
    t.equal(rows.get(keyless.headers['x-svc-call-id'] as string)?.key_id, null, 'the keyless outcome has key_id null');
    t.equal(rows.get(keyed.headers['x-svc-call-id'] as string)?.key_id, valid.id, 'a keyed call is attributed to its key');

    t.same([...rows.keys()].sort(), [...admitted.keys()].sort(), 'control holds exactly the admitted calls: no 403 became an outcome');
  });
});
