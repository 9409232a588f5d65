/**
 * `svcctl pool pause|resume --note TEXT` against a real control, on both stores: a pause takes
 * effect at once (the `meta` row every reader of `control/pool-pause.ts` sees, `pool show`'s
 * `manual_pause` and its coverage line), is audited with the operator and the note, and is
 * announced as a changelog notice that the public changelog (`/api/v1/changelog`), the status
 * answer and the changelog Atom feed (on the public API and the indexer) show; asking again
 * changes nothing and writes nothing; resume undoes it the same way. A note that is missing,
 * blank, too long or not plain text is refused naming `note`. The routes need the `money` scope,
 * and stay one-person with `money.approvals: 2`.
 */
import t, { type Test } from 'tap';
import { XMLParser } from 'fast-xml-parser';
import { POOL_PAUSED_META, manualPause } from '../../control/pool-pause';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { CHROME_UA, get } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';
import { startTeamControl } from '../fixtures/team';

const NOTE = 'upstream billing <outage> & checks';

/** The entries of an Atom feed: content and category, newest first. */
function feedEntries(text: string): { content: string; category: string }[] {
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', isArray: (name) => name === 'entry' }).parse(text);
  return ((doc.feed.entry ?? []) as any[]).map((e) => ({ content: e.content['#text'], category: e.category['@term'] }));
}

/** The audit rows of one action, newest first. */
async function audited(control: TestControl, action: string): Promise<any[]> {
  return (await control.admin('GET', `/_admin/v1/audit?action=${action}`)).body.entries;
}

/** The changelog as operators list it, newest first. */
/** The pool here is empty: without this, coverage would pause by itself too (and say so in the changelog). */
const NO_AUTOMATIC_PAUSE = { SVC_POOL_MIN_FREE: '0' };

async function changelog(control: TestControl): Promise<any[]> {
  return (await control.admin('GET', '/_admin/v1/changelog')).body.entries;
}

/** Where the public reads a changelog notice: `/api/v1/changelog`, the status answer, the Atom feed on both listeners. */
async function publicNewest(t: Test, control: TestControl, text: string): Promise<void> {
  const json = await get(control, control.urls.api, '/api/v1/changelog');
  t.equal(json.status, 200);
  t.match(json.body.entries[0], { id: Number, at: String, kind: 'notice', text }, '/api/v1/changelog lists it first');
  t.same(Object.keys(json.body.entries[0]).sort(), ['at', 'id', 'kind', 'text'], 'naming no operator');
  const status = await get(control, control.urls.api, '/api/v1/status');
  t.match(status.body.changelog[0], { kind: 'notice', text }, 'the status answer lists it first');
  for (const base of [control.urls.api, control.urls.indexer]) {
    const feed = await get(control, base, '/changelog.atom', { 'user-agent': CHROME_UA });
    t.equal(feed.status, 200, `${base}/changelog.atom`);
    t.same(feedEntries(feed.text)[0], { content: text, category: 'notice' }, 'the changelog feed’s newest entry');
    t.notOk(feed.text.includes('>root<'), 'no operator named');
  }
}

forEachStore(t, (t, kind) => {
  t.test('pause, pause again, resume, resume again', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now, env: NO_AUTOMATIC_PAUSE });
    const store = control.handle.ctx.store;
    const cli = (...args: string[]) => runCli(args, { control });

    t.same(await manualPause(store), { paused: false }, 'not paused on a new install');
    t.equal((await cli('pool', 'show', '--json')).json().coverage.manual, false);
    t.match((await cli('pool', 'show')).stdout, /^coverage: +on$/m);

    clock.advance(60_000);
    const paused = await cli('pool', 'pause', '--note', `  ${NOTE} `, '--json');
    t.equal(paused.code, 0, paused.stderr);
    t.same(paused.json(), { paused: true, changed: true, note: NOTE, at: new Date(clock.now()).toISOString() }, 'the note trimmed');
    t.same(await manualPause(store), { paused: true }, 'at once');
    t.equal(await store.meta(POOL_PAUSED_META), 1, `meta ${POOL_PAUSED_META} is 1`);
    const audit = await audited(control, 'pool.pause');
    t.equal(audit.length, 1, 'audited once');
    t.match(audit[0], { actor: 'root', token_id: 'root', approved_by: null, action: 'pool.pause', target: 'pool' });
    t.same(audit[0].detail, { note: NOTE, was: 'covered' });
    const notices = await changelog(control);
    t.equal(notices.length, 1);
    t.match(notices[0], { kind: 'notice', text: `Coverage paused: ${NOTE}`, author: 'root', flag: null, value: null });
    t.equal(notices[0].at, paused.json().at, 'written with the pause');
    await publicNewest(t, control, `Coverage paused: ${NOTE}`);
    t.equal((await cli('pool', 'show', '--json')).json().coverage.manual, true);
    t.match((await cli('pool', 'show')).stdout, /^coverage: +paused \(by an operator\): calls are admitted uncovered$/m);

    clock.advance(60_000);
    const again = await cli('pool', 'pause', '--note', 'still');
    t.equal(again.code, 0, again.stderr);
    t.equal(again.stdout, 'Coverage was already paused; nothing changed.');
    const againJson = await cli('pool', 'pause', '--note', 'still', '--json');
    t.same(againJson.json(), { paused: true, changed: false, note: 'still', at: new Date(clock.now()).toISOString() });
    t.equal((await audited(control, 'pool.pause')).length, 1, 'no new audit row');
    t.equal((await changelog(control)).length, 1, 'no new changelog entry');
    t.equal(await store.meta(POOL_PAUSED_META), 1);

    clock.advance(60_000);
    const resumed = await cli('pool', 'resume', '--note', 'billing back');
    t.equal(resumed.code, 0, resumed.stderr);
    t.match(resumed.stdout, new RegExp(`^Coverage resumed at ${new Date(clock.now()).toISOString()}\\.$`, 'm'));
    t.match(resumed.stdout, /^Published in the changelog: Coverage resumed: billing back$/m);
    t.same(await manualPause(store), { paused: false });
    t.equal(await store.meta(POOL_PAUSED_META), 0, `meta ${POOL_PAUSED_META} is 0`);
    const resumes = await audited(control, 'pool.resume');
    t.equal(resumes.length, 1);
    t.match(resumes[0], { actor: 'root', target: 'pool', detail: { note: 'billing back', was: 'paused' } });
    t.same(
      (await changelog(control)).map((e) => e.text),
      ['Coverage resumed: billing back', `Coverage paused: ${NOTE}`],
    );
    clock.advance(60_000); // past the public reads' cache
    await publicNewest(t, control, 'Coverage resumed: billing back');
    t.match((await cli('pool', 'show')).stdout, /^coverage: +on$/m);

    const notPaused = await cli('pool', 'resume', '--note', 'again', '--json');
    t.equal(notPaused.code, 0, notPaused.stderr);
    t.match(notPaused.json(), { paused: false, changed: false, note: 'again' });
    t.equal((await cli('pool', 'resume', '--note', 'again')).stdout, 'Coverage was not paused; nothing changed.');
    t.equal((await audited(control, 'pool.resume')).length, 1, 'no new audit row');
    t.equal((await changelog(control)).length, 2, 'no new changelog entry');

    // Paused again: the human form of the answer.
    const human = await cli('pool', 'pause', '--note', 'once more');
    t.match(human.stdout, /^Coverage paused at \S+: calls go on uncovered \(no premium, no refund\) until svcctl pool resume\.$/m);
    t.match(human.stdout, /^Published in the changelog: Coverage paused: once more$/m);
  });

  t.test('a note missing, blank, too long or not plain text is refused, naming note', async (t) => {
    const control = await startTestControl(t, { store: kind, env: NO_AUTOMATIC_PAUSE });
    const cli = (...args: string[]) => runCli(args, { control });
    for (const verb of ['pause', 'resume']) {
      const missing = await cli('pool', verb);
      t.equal(missing.code, 2, `${verb} without --note: a usage error`);
      t.match(missing.stderr, /--note/);
      for (const note of ['', '   ', 'x'.repeat(501)]) {
        const bad = await cli('pool', verb, '--note', note);
        t.equal(bad.code, 2, `${verb} --note of ${note.length} characters: exit 2`);
        t.match(bad.stderr, /^svcctl: note: .*\(svc_bad_request\)$/);
      }
      const path = `/_admin/v1/pool/${verb}`;
      const bodies: [string, unknown][] = [
        ['no body', undefined],
        ['no note', {}],
        ['a blank note', { note: ' \t ' }],
        ['a note over 500 characters', { note: 'x'.repeat(501) }],
        ['a note that is no string', { note: 7 }],
        ['a control character', { note: 'eject\u001b[2J' }],
        ['a bidi control', { note: 'fine\u202e' }],
      ];
      for (const [what, body] of bodies) {
        const res = await control.admin('POST', path, body);
        t.equal(res.status, 400, `${verb}, ${what}: 400`);
        t.equal(res.headers.get('content-type'), 'application/problem+json');
        t.equal(res.body.code, 'svc_bad_request');
        t.same(
          res.body.errors.map((e: { field: string }) => e.field),
          ['note'],
          `${verb}, ${what}: names note`,
        );
      }
      const extra = await control.admin('POST', path, { note: 'fine', paused: true });
      t.equal(extra.status, 400, `${verb}, an unknown field: 400`);
      t.match(extra.body.errors, [{ field: 'paused', message: 'is not a known field' }]);
    }
    const longest = await control.admin('POST', '/_admin/v1/pool/pause', { note: ` ${'x'.repeat(500)} ` });
    t.equal(longest.status, 200, '500 characters after trimming');
    t.equal(longest.body.note.length, 500);
    t.equal((await audited(control, 'pool.pause')).length, 1, 'only the valid request wrote');
    t.equal((await audited(control, 'pool.resume')).length, 0);
  });

  t.test('money scope, one person even with money.approvals: 2', async (t) => {
    const { control, tokens } = await startTeamControl(
      t,
      { cleo: ['read', 'money'], vic: ['read', 'settler', 'flags'] },
      { store: kind, env: NO_AUTOMATIC_PAUSE },
    );
    const as = (name: string, ...args: string[]) => runCli(args, { control, token: tokens[name]! });

    for (const verb of ['pause', 'resume']) {
      const denied = await as('vic', 'pool', verb, '--note', 'not mine');
      t.equal(denied.code, 1, `${verb} without money: exit 1`);
      t.match(denied.stderr, /POST \/_admin\/v1\/pool\/\w+ needs the scope money; operator vic holds .*svc_forbidden_scope/);
      const res = await control.admin('POST', `/_admin/v1/pool/${verb}`, { note: 'not mine' }, tokens.vic);
      t.equal(res.status, 403);
      t.match(res.body, { code: 'svc_forbidden_scope', scope: 'money' });
    }
    t.same(await manualPause(control.handle.ctx.store), { paused: false }, 'refused: nothing changed');

    const paused = await as('cleo', 'pool', 'pause', '--note', 'at once', '--json');
    t.equal(paused.code, 0, paused.stderr);
    t.match(paused.json(), { paused: true, changed: true, note: 'at once' }, 'acts without a second operator');
    t.same(await manualPause(control.handle.ctx.store), { paused: true });
    t.same((await control.admin('GET', '/_admin/v1/approvals?status=pending')).body.approvals, [], 'no request waits');
    const [row] = await audited(control, 'pool.pause');
    t.match(row, { actor: 'cleo', token_id: /^opt_/, approved_by: null, detail: { note: 'at once', was: 'covered' } });
    t.match((await changelog(control))[0], { text: 'Coverage paused: at once', author: 'cleo' });
    t.equal((await as('vic', 'pool', 'show', '--json')).json().coverage.manual, true, 'pool show stays read');

    const resumed = await as('cleo', 'pool', 'resume', '--note', 'done', '--json');
    t.match(resumed.json(), { paused: false, changed: true });
  });
});
