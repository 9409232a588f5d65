/**
 * Flags and the public changelog: every flag change is announced in the changelog in the
 * same transaction, a no-op set announces nothing, unknown flags list the known ones, and
 * the changelog reads newest first.
 */
import t from 'tap';
import { FLAG_NAMES } from '../../protocol/admin';
import { manualClock, startTestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';

forEachStore(t, (t, kind) => {
  t.test('flags start off', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const res = await control.admin('GET', '/_admin/v1/flags');
    t.equal(res.status, 200);
    t.same(res.body.flags.map((f: { name: string; value: boolean }) => [f.name, f.value]).sort(), FLAG_NAMES.map((n) => [n, false]).sort());
    t.type(res.body.version, 'number');
  });

  t.test('set a flag with a note → changelog entry; same value again → nothing', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const before = await control.admin('GET', '/_admin/v1/flags');

    const set = await control.admin('PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true, note: 'beta opens today' });
    t.equal(set.status, 200);
    t.equal(set.body.name, 'beta_gate_enabled');
    t.equal(set.body.value, true);
    t.equal(set.body.changed, true);
    t.equal(set.body.note, 'beta opens today');
    t.equal(set.body.updated_by, 'root');
    t.equal(set.body.updated_at, new Date(clock.now()).toISOString());
    t.equal(set.body.version, before.body.version + 1, 'bumps the state version by one');
    t.type(set.body.changelog_id, 'number');

    const log = await control.admin('GET', '/_admin/v1/changelog');
    t.equal(log.status, 200);
    t.equal(log.body.entries.length, 1);
    const entry = log.body.entries[0];
    t.equal(entry.id, set.body.changelog_id);
    t.equal(entry.kind, 'flag');
    t.equal(entry.flag, 'beta_gate_enabled');
    t.equal(entry.value, true);
    t.equal(entry.author, 'root');
    t.match(entry.text, 'beta opens today', 'the text carries the note');
    t.match(entry.text, /beta_gate_enabled.*on/, 'and says what changed');

    const get = await control.admin('GET', '/_admin/v1/flags/system_flags.beta_gate_enabled');
    t.equal(get.status, 200, 'the system_flags. form is accepted');
    t.equal(get.body.name, 'beta_gate_enabled');
    t.equal(get.body.value, true);

    clock.advance(1000);
    const again = await control.admin('PUT', '/_admin/v1/flags/system_flags.beta_gate_enabled', { value: true, note: 'again' });
    t.equal(again.status, 200);
    t.equal(again.body.changed, false, 'same value: changed false');
    t.equal(again.body.changelog_id, null);
    t.equal(again.body.version, set.body.version, 'no version bump');
    t.equal(again.body.note, 'beta opens today', 'the earlier note stays');
    const log2 = await control.admin('GET', '/_admin/v1/changelog');
    t.equal(log2.body.entries.length, 1, 'no new changelog entry');

    const off = await control.admin('PUT', '/_admin/v1/flags/system_flags.beta_gate_enabled', { value: false });
    t.equal(off.body.changed, true);
    t.equal(off.body.value, false);
    t.equal(off.body.note, null, 'a change without a note clears it');
    const log3 = await control.admin('GET', '/_admin/v1/changelog');
    t.equal(log3.body.entries.length, 2);
    t.equal(log3.body.entries[0].value, false, 'newest first');
    t.match(log3.body.entries[0].text, /beta_gate_enabled.*off/);

    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.equal(audit.body.entries.filter((e: { action: string }) => e.action === 'flags.set').length, 2, 'one audit entry per actual change');
  });

  t.test('bad flag requests', async (t) => {
    const control = await startTestControl(t, { store: kind });
    for (const [method, body] of [
      ['PUT', { value: true }],
      ['GET', undefined],
    ] as const) {
      const res = await control.admin(method, '/_admin/v1/flags/bogus', body);
      t.equal(res.status, 404, `${method} unknown flag: 404`);
      t.equal(res.body.code, 'svc_not_found');
      t.same(res.body.known_flags, [...FLAG_NAMES], 'lists the known flags');
      t.match(res.body.detail, 'beta_gate_enabled');
    }
    const prefixOnly = await control.admin('PUT', '/_admin/v1/flags/system_flags.bogus', { value: true });
    t.equal(prefixOnly.status, 404, 'system_flags.<unknown> is unknown too');

    for (const body of [{ value: 'yes' }, {}, { value: true, note: '' }, { value: true, extra: 1 }]) {
      const res = await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', body);
      t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
      t.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0, 'with per-field errors');
    }
    const flag = await control.admin('GET', '/_admin/v1/flags/maintenance_mode');
    t.equal(flag.body.value, false, 'refused sets change nothing');
    const log = await control.admin('GET', '/_admin/v1/changelog');
    t.same(log.body.entries, [], 'and announce nothing');
  });

  t.test('changelog notices, newest first', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const first = await control.admin('POST', '/_admin/v1/changelog', { text: 'first notice' });
    t.equal(first.status, 201);
    t.equal(first.body.kind, 'notice');
    t.equal(first.body.text, 'first notice');
    t.equal(first.body.author, 'root');
    t.equal(first.body.flag, null);
    t.equal(first.body.value, null);
    t.equal(first.body.at, new Date(clock.now()).toISOString());

    clock.advance(1000);
    await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: true, note: 'db work' });
    clock.advance(1000);
    const third = await control.admin('POST', '/_admin/v1/changelog', { text: '  trimmed  ' });
    t.equal(third.body.text, 'trimmed', 'text is trimmed');

    const list = await control.admin('GET', '/_admin/v1/changelog');
    t.same(
      list.body.entries.map((e: { kind: string }) => e.kind),
      ['notice', 'flag', 'notice'],
      'newest first',
    );
    const ids = list.body.entries.map((e: { id: number }) => e.id);
    t.ok(ids[0] > ids[1] && ids[1] > ids[2], 'ids descend');
    const times = list.body.entries.map((e: { at: string }) => Date.parse(e.at));
    t.ok(times[0] > times[1] && times[1] > times[2], 'times descend');

    const one = await control.admin('GET', '/_admin/v1/changelog?limit=1');
    t.same(
      one.body.entries.map((e: { id: number }) => e.id),
      [ids[0]],
      'limit=1 gives the newest',
    );
    for (const limit of ['0', '-1', 'abc', '1.5', '1001']) {
      const bad = await control.admin('GET', `/_admin/v1/changelog?limit=${limit}`);
      t.equal(bad.status, 400, `limit=${limit}: 400`);
      t.equal(bad.body.code, 'svc_bad_request');
    }
    for (const body of [{ text: '' }, { text: '   ' }, {}, { text: 'x'.repeat(4001) }]) {
      const bad = await control.admin('POST', '/_admin/v1/changelog', body);
      t.equal(bad.status, 400, `${JSON.stringify(body).slice(0, 40)}: 400`);
    }

    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.equal(audit.body.entries.filter((e: { action: string }) => e.action === 'changelog.add').length, 2, 'notices are audited');
  });
});
