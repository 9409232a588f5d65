/**
 * Keys through the admin API (docs/design.md §5): issue, list, show, revoke, rotate with grace, lift,
 * wallet attach/detach, expiry on an injected clock, and an audit entry for every change
 * that never holds the plaintext.
 */
import t from 'tap';
import { hashKey, isWellFormedKey, keyStub } from '../../protocol/keys';
import { captureLogs, manualClock, propertyNames, startTestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';

const SOLANA = 'So11111111111111111111111111111111111111112';
const EVM = '0x52908400098527886E0F7030069857D2E4169EE7';
const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

forEachStore(t, (t, kind) => {
  t.test('issue, list, show', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });

    const issued = await control.admin('POST', '/_admin/v1/keys', { name: 'demo' });
    t.equal(issued.status, 201);
    const key: string = issued.body.key;
    t.ok(isWellFormedKey(key), 'the key is svc_beta_ + ≥ 32 base58 characters');
    t.match(issued.body.id, /^key_[1-9A-HJ-NP-Za-km-z]+$/, 'opaque id');
    t.equal(issued.body.prefix, keyStub(key), 'prefix is the display stub');
    t.equal(issued.body.name, 'demo');
    t.equal(issued.body.status, 'active');
    t.equal(issued.body.created_at, iso(clock.now()));
    t.equal(issued.body.expires_at, null);
    t.type(issued.body.version, 'number');
    t.equal(issued.body.secrets.length, 1);

    const second = await control.admin('POST', '/_admin/v1/keys', {});
    t.equal(second.status, 201, 'a key with no fields at all');
    t.not(second.body.key, key, 'each issue makes a new key');
    t.ok(second.body.version > issued.body.version, 'each issue bumps the state version');

    const list = await control.admin('GET', '/_admin/v1/keys');
    t.equal(list.status, 200);
    t.same(list.body.keys.map((k: { id: string }) => k.id).sort(), [issued.body.id, second.body.id].sort());
    t.notOk(propertyNames(list.body).has('key'), 'no `key` field anywhere in the list');
    t.notOk(propertyNames(list.body).has('hash'), 'no `hash` field either');
    t.notOk(list.text.includes(key), 'the plaintext is not in the list');
    t.notOk(list.text.includes(hashKey(key)), 'nor is its hash');

    const show = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(show.status, 200);
    t.equal(show.body.id, issued.body.id);
    t.equal(show.body.name, 'demo');
    t.equal(show.body.prefix, keyStub(key));
    t.notOk(propertyNames(show.body).has('key'), 'no `key` field in show');
    t.notOk(show.text.includes(key), 'the plaintext is not in show');
    const { key: _k, version: _v, ...view } = issued.body;
    t.same(show.body, view, 'show is the issue answer without key and version');

    const missing = await control.admin('GET', '/_admin/v1/keys/key_doesnotexist');
    t.equal(missing.status, 404);
    t.equal(missing.body.code, 'svc_not_found');
  });

  t.test('issue validation', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const bad: [unknown, string][] = [
      [{ endpoints: ['nope'] }, 'endpoints'],
      [{ name: '' }, 'name'],
      [{ expires_in_seconds: 0 }, 'expires_in_seconds'],
      [{ wallet: 'not-a-wallet' }, 'wallet'],
      [{ limit: { count: 0, window_seconds: 60 } }, 'limit.count'],
      [{ colour: 'blue' }, 'colour'],
    ];
    for (const [body, field] of bad) {
      const res = await control.admin('POST', '/_admin/v1/keys', body);
      t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
      t.ok(
        (res.body.errors ?? []).some((e: { field: string }) => e.field === field),
        `${JSON.stringify(body)}: errors name ${field} (got ${JSON.stringify(res.body.errors)})`,
      );
    }
    const notJson = await control.request(control.urls.control + '/_admin/v1/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${control.adminToken}`, 'content-type': 'application/json' },
      body: '{"name":',
    });
    t.equal(notJson.status, 400, 'invalid JSON');
    t.equal(notJson.body.code, 'svc_bad_request');
    const list = await control.admin('GET', '/_admin/v1/keys');
    t.same(list.body.keys, [], 'no refused issue created a key');

    const ep = await control.admin('POST', '/_admin/v1/endpoints', { id: 'echo', upstream: 'http://127.0.0.1:9' });
    t.equal(ep.status, 201);
    const scoped = await control.admin('POST', '/_admin/v1/keys', { endpoints: ['echo', 'echo'] });
    t.equal(scoped.status, 201, 'an existing endpoint is accepted');
    t.same(scoped.body.endpoints, ['echo'], 'duplicates collapse');
  });

  t.test('revoke', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const issued = await control.admin('POST', '/_admin/v1/keys', { name: 'r' });
    clock.advance(1000);

    const revoked = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/revoke`);
    t.equal(revoked.status, 200);
    t.equal(revoked.body.status, 'revoked');
    t.equal(revoked.body.revoked_at, iso(clock.now()));
    t.same(revoked.body.secrets, [], 'no secret is accepted any more');
    t.equal(revoked.body.changed, true);
    t.ok(revoked.body.version > issued.body.version, 'bumps the state version');
    t.notOk(revoked.text.includes(issued.body.key), 'no plaintext in the answer');

    clock.advance(1000);
    const again = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/revoke`);
    t.equal(again.status, 200, 'revoking twice is fine');
    t.equal(again.body.changed, false);
    t.equal(again.body.version, revoked.body.version, 'and changes nothing');
    t.equal(again.body.revoked_at, revoked.body.revoked_at, 'revoked_at stays the first time');

    const show = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(show.body.status, 'revoked');

    const missing = await control.admin('POST', '/_admin/v1/keys/key_nope/revoke');
    t.equal(missing.status, 404);
    t.equal(missing.body.code, 'svc_not_found');
  });

  t.test('rotate with grace', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const issued = await control.admin('POST', '/_admin/v1/keys', { name: 'rot' });
    const oldKey: string = issued.body.key;
    clock.advance(5000);

    const rotated = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: 3600 });
    t.equal(rotated.status, 200);
    const newKey: string = rotated.body.key;
    t.ok(isWellFormedKey(newKey), 'the new key is well-formed');
    t.not(newKey, oldKey, 'and different');
    t.equal(rotated.body.id, issued.body.id, 'same key id');
    t.equal(rotated.body.prefix, keyStub(newKey), 'the display prefix is the new one');
    t.ok(rotated.body.version > issued.body.version);
    t.equal(rotated.body.secrets.length, 2, 'two secrets during the grace');
    const byPrefix = new Map(rotated.body.secrets.map((s: { prefix: string }) => [s.prefix, s]));
    const oldSecret = byPrefix.get(keyStub(oldKey)) as { expires_at: string | null } | undefined;
    const newSecret = byPrefix.get(keyStub(newKey)) as { expires_at: string | null } | undefined;
    t.ok(oldSecret && newSecret, 'one secret per key');
    t.equal(oldSecret?.expires_at, iso(clock.now() + HOUR), 'the old secret expires at now + grace');
    t.equal(newSecret?.expires_at, null, 'the new secret does not expire');
    t.notOk(rotated.text.includes(oldKey), 'the old plaintext is not repeated');

    clock.advance(HOUR + 1);
    const after = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.same(
      after.body.secrets.map((s: { prefix: string }) => s.prefix),
      [keyStub(newKey)],
      'after the grace only the new secret remains',
    );

    const noGrace = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: 0 });
    t.equal(noGrace.status, 200);
    t.equal(noGrace.body.secrets.length, 1, 'grace 0: the previous secret stops at once');

    const bad = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: -1 });
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'svc_bad_request');

    const defaultGrace = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, {});
    const retiring = defaultGrace.body.secrets.find((s: { expires_at: string | null }) => s.expires_at !== null);
    t.equal(retiring?.expires_at, iso(clock.now() + control.config.keys.rotateGraceS * 1000), 'default grace from config (24 h)');

    await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/revoke`);
    const conflict = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: 60 });
    t.equal(conflict.status, 409, 'rotating a revoked key is a conflict');
    t.equal(conflict.body.code, 'svc_conflict');
    t.notOk('key' in (conflict.body ?? {}), 'and no key is handed out');
  });

  t.test('a rotation and a lift answer with the key as they left it, whatever commits right after', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const store = control.handle.ctx.store;
    const issued = await control.admin('POST', '/_admin/v1/keys', { name: 'raced' });
    // Right after each change of the key commits, another one lands (as another control's
    // would), before the handler answers.
    const mutate = store.mutate.bind(store);
    let racing = true;
    let races = 0;
    store.mutate = (async (...args: Parameters<typeof mutate>) => {
      const done = await mutate(...args);
      if (racing && args[1].action !== 'test.race') {
        racing = false;
        races++;
        await mutate(
          { actor: 'test', now: Date.now() },
          { action: 'test.race', changes: [{ kind: 'key', entity: issued.body.id }] },
          async (tx) => {
            await tx.keys.expireSecrets(issued.body.id, Date.now() + 1000, Date.now());
            await tx.keys.addSecret(issued.body.id, String(races).repeat(64), 'svc_beta_RACE', Date.now());
            await tx.keys.setLift(issued.body.id, { count: 7, window_seconds: 60, until: Date.now() + 60_000 });
          },
        );
      }
      return done;
    }) as typeof store.mutate;

    const rotated = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, {});
    t.equal(rotated.status, 200);
    t.equal(rotated.body.prefix, keyStub(rotated.body.key), 'the prefix is the secret this rotation made');
    t.notOk(
      rotated.body.secrets.some((s: { prefix: string }) => s.prefix === 'svc_beta_RACE'),
      'the secret the next change added is not in the answer',
    );
    t.equal(rotated.body.lift, null, 'nor its lift');

    racing = true;
    const lifted = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/lift`, {
      limit: { count: 500, window_seconds: 60 },
      for_seconds: 600,
    });
    t.equal(lifted.status, 200, lifted.text);
    t.match(lifted.body.lift, { count: 500, window_seconds: 60 }, 'the lift this call set, not the next change’s');
    t.equal(races, 2, 'a change landed right after each');
    store.mutate = mutate;
  });

  t.test('a second rotation does not extend the first retired secret', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const issued = await control.admin('POST', '/_admin/v1/keys', {});
    const firstStub = keyStub(issued.body.key);
    const t0 = clock.now();
    await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: 3600 });
    clock.advance(60_000);
    const second = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, { grace_seconds: 7 * 86400 });
    t.equal(second.status, 200);
    const first = second.body.secrets.find((s: { prefix: string }) => s.prefix === firstStub);
    // The original key (perhaps rotated because it leaked) must stop when its grace said so.
    t.ok(
      first === undefined || Date.parse(first.expires_at) <= t0 + HOUR,
      `first secret expires no later than its original grace (${iso(t0 + HOUR)}); got ${first?.expires_at}`,
    );
    // What gateways enforce once that grace is over.
    clock.set(t0 + HOUR + 1);
    const live = await control.handle.ctx.store.liveKey(issued.body.id, clock.now());
    const hashes = (live?.secrets ?? []).map((s) => s.hash);
    t.equal(hashes.length, 2, 'the two later secrets are live');
    t.notOk(hashes.includes(hashKey(issued.body.key)), 'the first key is no longer accepted after its grace');
  });

  t.test('lift', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const issued = await control.admin('POST', '/_admin/v1/keys', { limit: { count: 60, window_seconds: 60 } });
    t.same(issued.body.limit, { count: 60, window_seconds: 60 });
    t.equal(issued.body.lift, null);

    const lifted = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/lift`, {
      limit: { count: 600, window_seconds: 60 },
      for_seconds: 7200,
    });
    t.equal(lifted.status, 200, lifted.text);
    t.same(lifted.body.lift, { count: 600, window_seconds: 60, until: iso(clock.now() + 2 * HOUR) });
    t.same(lifted.body.limit, { count: 60, window_seconds: 60 }, 'the base limit stays');
    t.ok(lifted.body.version > issued.body.version, 'bumps the state version');
    const shown = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.same(shown.body.lift, lifted.body.lift, 'lift visible in show');
    const listed = await control.admin('GET', '/_admin/v1/keys');
    t.same(listed.body.keys[0].lift, lifted.body.lift, 'lift visible in list');

    clock.advance(2 * HOUR + 1);
    const later = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(later.body.lift, null, 'the lift ends at its expiry');

    const bad = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/lift`, {
      limit: { count: 0, window_seconds: 60 },
      for_seconds: 0,
    });
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'svc_bad_request');
    const fields = (bad.body.errors ?? []).map((e: { field: string }) => e.field).sort();
    t.same(fields, ['for_seconds', 'limit.count'], 'one error per bad field');
    t.ok(
      bad.body.errors.every((e: { message: string }) => e.message.length > 0),
      'each with a message',
    );

    const missingFields = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/lift`, {});
    t.equal(missingFields.status, 400);
    t.same((missingFields.body.errors ?? []).map((e: { field: string }) => e.field).sort(), ['for_seconds', 'limit']);

    const unknown = await control.admin('POST', '/_admin/v1/keys/key_nope/lift', {
      limit: { count: 1, window_seconds: 1 },
      for_seconds: 1,
    });
    t.equal(unknown.status, 404);
  });

  t.test('wallet attach and detach', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const issued = await control.admin('POST', '/_admin/v1/keys', {});
    const path = `/_admin/v1/keys/${issued.body.id}/wallet`;

    const sol = await control.admin('PUT', path, { wallet: SOLANA });
    t.equal(sol.status, 200);
    t.equal(sol.body.wallet, SOLANA, 'Solana address attached');
    const evm = await control.admin('PUT', path, { wallet: EVM });
    t.equal(evm.status, 200);
    t.equal(evm.body.wallet, EVM, 'EVM address replaces it');

    for (const wallet of ['0x123', SOLANA.slice(0, -1) + '0', '11111111111111111111111111111111'.slice(1), '']) {
      const bad = await control.admin('PUT', path, { wallet });
      t.equal(bad.status, 400, `${JSON.stringify(wallet)}: 400`);
      t.equal(bad.body.code, 'svc_bad_request');
      t.same(
        bad.body.errors?.map((e: { field: string }) => e.field),
        ['wallet'],
        'names the wallet field',
      );
    }
    const still = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(still.body.wallet, EVM, 'a refused wallet changes nothing');

    const detached = await control.admin('DELETE', path);
    t.equal(detached.status, 200);
    t.equal(detached.body.wallet, null);
    const shown = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(shown.body.wallet, null, 'detached');

    const withWallet = await control.admin('POST', '/_admin/v1/keys', { wallet: SOLANA });
    t.equal(withWallet.body.wallet, SOLANA, 'a wallet can be given at issue');
  });

  t.test('expiry follows the injected clock', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const issued = await control.admin('POST', '/_admin/v1/keys', { expires_in_seconds: 60 });
    t.equal(issued.body.status, 'active');
    t.equal(issued.body.expires_at, iso(clock.now() + 60_000));

    clock.advance(59_999);
    t.equal((await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`)).body.status, 'active', 'active just before');
    clock.advance(1);
    const expired = await control.admin('GET', `/_admin/v1/keys/${issued.body.id}`);
    t.equal(expired.body.status, 'expired', 'expired at expires_at');
    t.same(expired.body.secrets, []);
    const listed = await control.admin('GET', '/_admin/v1/keys');
    t.equal(listed.body.keys[0].status, 'expired', 'list agrees');
    const status = await control.admin('GET', '/_admin/v1/status');
    t.equal(status.body.counts.keys_active, 0, 'status counts it out');
    t.equal(status.body.counts.keys_total, 1);

    const rotate = await control.admin('POST', `/_admin/v1/keys/${issued.body.id}/rotate`, {});
    t.equal(rotate.status, 409, 'an expired key cannot be rotated');
    t.equal(rotate.body.code, 'svc_conflict');
  });

  t.test('every change is audited as admin; the plaintext is in no audit entry or log line', async (t) => {
    const logs = captureLogs();
    const control = await startTestControl(t, { store: kind, log: logs.log });
    const a = await control.admin('POST', '/_admin/v1/keys', { name: 'a' });
    const b = await control.admin('POST', '/_admin/v1/keys', { name: 'b' });
    const rotated = await control.admin('POST', `/_admin/v1/keys/${a.body.id}/rotate`, { grace_seconds: 60 });
    await control.admin('POST', `/_admin/v1/keys/${a.body.id}/lift`, { limit: { count: 5, window_seconds: 1 }, for_seconds: 60 });
    await control.admin('PUT', `/_admin/v1/keys/${a.body.id}/wallet`, { wallet: SOLANA });
    await control.admin('DELETE', `/_admin/v1/keys/${a.body.id}/wallet`);
    await control.admin('POST', `/_admin/v1/keys/${b.body.id}/revoke`);
    await control.admin('POST', `/_admin/v1/keys/${b.body.id}/revoke`);

    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.equal(audit.status, 200);
    const keyEntries = audit.body.entries.filter((e: { action: string }) => e.action.startsWith('keys.'));
    const actions = keyEntries.map((e: { action: string; target: string }) => `${e.action} ${e.target}`).sort();
    t.same(
      actions,
      [
        `keys.issue ${a.body.id}`,
        `keys.issue ${b.body.id}`,
        `keys.lift ${a.body.id}`,
        `keys.revoke ${b.body.id}`,
        `keys.rotate ${a.body.id}`,
        `keys.wallet.attach ${a.body.id}`,
        `keys.wallet.detach ${a.body.id}`,
      ].sort(),
      'one entry per change (the no-op second revoke adds none)',
    );
    t.ok(
      keyEntries.every((e: { actor: string; token_id: string }) => e.actor === 'root' && e.token_id === 'root'),
      'actor is root, with the data dir’s admin token',
    );
    const ids = audit.body.entries.map((e: { id: number }) => e.id);
    t.same(
      ids,
      [...ids].sort((x: number, y: number) => y - x),
      'newest first',
    );
    for (const key of [a.body.key, b.body.key, rotated.body.key]) {
      t.notOk(audit.text.includes(key), `plaintext ${keyStub(key)}… is not in the audit log`);
      t.notOk(audit.text.includes(key.slice(keyStub(key).length)), 'nor its secret part');
    }
    t.match(logs.text(), 'control ready', 'the logs were captured');
    for (const key of [a.body.key, b.body.key, rotated.body.key]) {
      t.notOk(logs.text().includes(key), `plaintext ${keyStub(key)}… is not logged`);
    }
    const issue = keyEntries.find((e: { action: string; target: string }) => e.action === 'keys.issue' && e.target === a.body.id);
    t.equal(issue.detail.prefix, keyStub(a.body.key), 'the audit keeps the display stub');
  });
});
