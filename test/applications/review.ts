/**
 * Operator review with `svcctl applications` (in-process against an in-process control, the
 * operator notifier): list in priority order with age against the 24-hour target and filters,
 * show, approve (a key bound to the application, printed once), reject (no key), add (the
 * direct-contact fallback, validated like the form), redeliver, conflicts and the audit log.
 */
import t from 'tap';
import { hashKey, isWellFormedKey } from '../../protocol/keys';
import { runCli } from '../fixtures/cli';
import { manualClock, propertyNames, startTestControl } from '../fixtures/control';
import { SOLANA_WALLET, agentAnswers, merchantAnswers, submitJson } from '../fixtures/applications';
import { forEachStore } from '../fixtures/stores';

const KEY_PATTERN = /svc_beta_[1-9A-HJ-NP-Za-km-z]{32,}/g;

forEachStore(t, (t, kind) => {
  t.test('list, show, approve, reject, add', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });
    const cli = (...args: string[]) => runCli(args, { control, now: clock.now });
    await control.admin('POST', '/_admin/v1/endpoints', { id: 'alpha', upstream: 'http://127.0.0.1:9/alpha' });
    await control.admin('POST', '/_admin/v1/endpoints', { id: 'beta', upstream: 'http://127.0.0.1:9/beta' });

    // Four applications, an hour apart, lowest priority first.
    const submit = async (answers: Record<string, unknown>) => {
      const res = await submitJson(control.urls.api, answers);
      t.equal(res.status, 201, res.text);
      clock.advance(3600_000);
      return res.body.id as string;
    };
    const merchant = await submit(merchantAnswers());
    const noUsage = await submit(
      agentAnswers({
        contact_name: 'Bo',
        apis_paid: [],
        why: 'starting out',
        wallet: '',
        feedback_opt_in: false,
        social_url: 'https://x.com/bo',
      }),
    );
    const heavy = await submit(agentAnswers());
    const sameScoreOlder = await submit(agentAnswers({ contact_name: 'Cy', social_url: 'https://github.com/cy' }));

    await t.test('list --json: pending by score, then oldest; age against 24 h', async (t) => {
      const res = await cli('applications', 'list', '--json');
      t.equal(res.code, 0, res.stderr);
      const { applications, answer_within_hours } = res.json();
      t.equal(answer_within_hours, 24);
      t.same(
        applications.map((a: any) => a.id),
        [heavy, sameScoreOlder, noUsage, merchant],
        'highest score first; ties oldest first',
      );
      const top = applications[0];
      t.equal(top.priority.score, 90);
      t.same(top.priority.reasons, [
        '+40 AI agent developer',
        '+20 pays for 2 APIs now',
        '+15 will give feedback (early tester)',
        '+10 wallet given',
        '+5 links github.com',
      ]);
      t.equal(applications[3].age_hours, 4, 'the first one is four hours old');
      t.equal(applications[3].overdue, false);
      t.equal(applications[3].due_at, new Date(Date.parse(applications[3].received_at) + 24 * 3600_000).toISOString());
    });

    await t.test('filters and the overdue flag', async (t) => {
      const testers = (await cli('applications', 'list', '--testers', '--json')).json().applications.map((a: any) => a.id);
      t.same(testers, [heavy, sameScoreOlder], '--testers: feedback opt-ins only');
      t.same((await cli('applications', 'list', '--overdue', '--json')).json().applications, [], 'nothing overdue yet');
      clock.advance(21 * 3600_000); // the merchant is 25 h old, the next one 24 h
      const overdue = (await cli('applications', 'list', '--overdue', '--json')).json().applications;
      t.same(
        overdue.map((a: any) => a.id),
        [merchant],
        '--overdue: pending past the target',
      );
      t.equal(overdue[0].overdue, true);
      const human = await cli('applications', 'list');
      t.equal(human.code, 0);
      t.match(human.stdout, /SCORE/);
      t.match(human.stdout, new RegExp(`${merchant}\\s+10 .*25\\.0h OVERDUE`), 'the table flags it');
      t.match(human.stdout, /1 pending application\(s\) past the 24-hour answer target/);
      t.match(human.stdout, /\+40 AI agent developer/, 'and shows the reasons');
    });

    let keyId = '';
    await t.test('approve: a key bound to the application, shown once with the handle', async (t) => {
      const res = await cli('applications', 'approve', heavy, '--endpoint', 'alpha', '--json');
      t.equal(res.code, 0, res.stderr);
      const body = res.json();
      t.ok(isWellFormedKey(body.key), 'the operator notifier returns the key');
      keyId = body.key_id;
      t.match(body, {
        key_id: /^key_/,
        endpoints: ['alpha'],
        application: { id: heavy, status: 'approved', key_id: body.key_id, decided_by: 'root', answered_late: false },
        delivery: {
          notifier: 'operator',
          status: 'shown_to_operator',
          attempts: 1,
          error: null,
          deliver_to: { contact_name: 'Ada Lovelace', messaging_handle: 'telegram @ada' },
        },
      });
      t.match(body.message, body.key, 'the message to send holds the key');
      t.match(body.message, /Authorization: Bearer/);

      const key = (await control.handle.ctx.store.keys.byId(keyId))!;
      t.equal(key.application_id, heavy, 'the key is bound to the application');
      t.equal(key.wallet, SOLANA_WALLET, 'with the applicant’s wallet');
      t.same(JSON.parse(key.endpoints), ['alpha']);
      const secrets = await control.handle.ctx.store.keys.liveSecrets(keyId, clock.now());
      t.same(
        secrets.map((s) => s.hash),
        [hashKey(body.key)],
        'the key authenticates as that key',
      );

      const show = await cli('applications', 'show', heavy, '--json');
      t.equal(show.code, 0);
      const detail = show.json();
      t.match(detail, {
        status: 'approved',
        key: { id: keyId, status: 'active', endpoints: ['alpha'] },
        delivery: { status: 'shown_to_operator', notifier: 'operator' },
      });
      t.same(
        detail.deliveries.map((d: any) => d.outcome),
        ['shown_to_operator'],
      );
      t.notOk(propertyNames(detail).has('key') && typeof detail.key === 'string', 'show has no plaintext');
      t.notOk(show.stdout.includes(body.key), 'show never prints the key');

      const again = await cli('applications', 'approve', heavy);
      t.equal(again.code, 1, 'approving twice is a conflict');
      t.match(again.stderr, /already approved.*svc_conflict/);
    });

    await t.test('approve with an unknown endpoint: usage error, nothing changes', async (t) => {
      const res = await cli('applications', 'approve', sameScoreOlder, '--endpoint', 'nope');
      t.equal(res.code, 2);
      t.match(res.stderr, /unknown endpoint\(s\): nope/);
      t.equal((await cli('applications', 'show', sameScoreOlder, '--json')).json().status, 'pending');
    });

    await t.test('approve (human): the key appears exactly once', async (t) => {
      clock.advance(60_000);
      const res = await cli('applications', 'approve', sameScoreOlder);
      t.equal(res.code, 0, res.stderr);
      const keys = res.stdout.match(KEY_PATTERN) ?? [];
      t.equal(keys.length, 1, 'printed once');
      t.match(res.stdout, /Send this message to Cy at telegram @ada/);
      t.match(res.stdout, /endpoints: all/);
    });

    await t.test('reject: no key', async (t) => {
      clock.advance(60_000);
      const before = (await control.handle.ctx.store.keys.list()).length;
      const res = await cli('applications', 'reject', merchant, '--reason', 'not a fit yet', '--json');
      t.equal(res.code, 0, res.stderr);
      t.match(res.json().application, {
        id: merchant,
        status: 'rejected',
        reject_reason: 'not a fit yet',
        key_id: null,
        answered_late: true,
      });
      const after = await control.handle.ctx.store.keys.list();
      t.equal(after.length, before, 'no key was issued');
      t.notOk(after.some((k) => k.application_id === merchant));
      t.equal((await cli('applications', 'approve', merchant)).code, 1, 'a rejected application cannot be approved');
      t.equal((await cli('applications', 'reject', merchant)).code, 1, 'nor rejected twice');
      t.equal((await cli('applications', 'reject', heavy)).code, 1, 'an approved one cannot be rejected');
      const human = await cli('applications', 'show', merchant);
      t.match(human.stdout, /status:\s+rejected \(not a fit yet\)/);
      t.equal((await cli('applications', 'show', 'app_nope')).code, 1, 'unknown id: exit 1');
    });

    await t.test('list --pending after decisions', async (t) => {
      const pending = (await cli('applications', 'list', '--pending', '--json')).json().applications.map((a: any) => a.id);
      t.same(pending, [noUsage]);
      const all = (await cli('applications', 'list', '--json')).json().applications.map((a: any) => a.status);
      t.same(all, ['pending', 'rejected', 'approved', 'approved'], 'decided ones after pending, newest decision first');
    });

    await t.test('add: the direct-contact fallback, validated like the form', async (t) => {
      const bad = await cli(
        'applications',
        'add',
        '--building',
        'x',
        '--contact-name',
        'Dee',
        '--social-url',
        'nope',
        '--type',
        'api_merchant',
      );
      t.equal(bad.code, 2, 'invalid answers are a usage error');
      t.match(bad.stderr, /--social-url: must be a link/);
      t.match(bad.stderr, /--messaging-handle: is required/);
      t.match(bad.stderr, /--why: is required for merchants/);

      const args = [
        'applications',
        'add',
        '--building',
        'An agent for travel',
        '--contact-name',
        'Dee',
        '--social-url',
        'https://github.com/dee',
        '--messaging-handle',
        'discord dee',
        '--type',
        'ai-agent',
        '--api',
        'Amadeus',
        '--api',
        'OpenAI',
        '--feedback',
        '--received-at',
        new Date(clock.now() - 2 * 3600_000).toISOString(),
      ];
      const added = await cli(...args, '--json');
      t.equal(added.code, 0, added.stderr);
      const app = added.json().application;
      t.match(app, {
        source: 'direct',
        recorded_by: 'root',
        applicant_type: 'ai_agent',
        apis_paid: ['Amadeus', 'OpenAI'],
        feedback_opt_in: true,
        age_hours: 2,
      });
      t.equal(added.json().duplicate, false);
      const dup = await cli(...args);
      t.equal(dup.code, 0);
      t.match(dup.stdout, new RegExp(`Already recorded as ${app.id}`));
      const list = (await cli('applications', 'list', '--pending', '--json')).json().applications.map((a: any) => a.id);
      t.same(list, [app.id, noUsage], 'the direct application is reviewed in the same queue');

      const future = await control.admin('POST', '/_admin/v1/applications', {
        application: merchantAnswers({ contact_name: 'Eve' }),
        received_at: new Date(clock.now() + 3600_000).toISOString(),
      });
      t.equal(future.status, 400);
      t.equal(future.body.errors[0].field, 'received_at');
    });

    await t.test('redeliver --to-operator: a new secret; the old one stops working', async (t) => {
      const before = (await control.handle.ctx.store.keys.liveSecrets(keyId, clock.now())).map((s) => s.hash);
      const res = await cli('applications', 'redeliver', heavy, '--to-operator', '--json');
      t.equal(res.code, 0, res.stderr);
      const body = res.json();
      t.equal(body.key_id, keyId, 'the same key (its grants and ledger account stay)');
      t.ok(isWellFormedKey(body.key));
      const after = (await control.handle.ctx.store.keys.liveSecrets(keyId, clock.now())).map((s) => s.hash);
      t.same(after, [hashKey(body.key)], 'only the new secret is live');
      t.notOk(after.includes(before[0]!));
      t.equal((await cli('keys', 'revoke', keyId)).code, 0);
      t.equal((await cli('applications', 'redeliver', heavy)).code, 1, 'a revoked key is not redelivered');
    });

    await t.test('audit log: every decision, never a key', async (t) => {
      const audit = await control.admin('GET', '/_admin/v1/audit?limit=1000');
      const actions = audit.body.entries.map((e: any) => e.action);
      for (const action of [
        'applications.submit',
        'applications.approve',
        'applications.deliver',
        'applications.reject',
        'applications.redeliver',
        'keys.issue',
      ]) {
        t.ok(actions.includes(action), `${action} is audited`);
      }
      t.equal(audit.text.match(KEY_PATTERN), null, 'no plaintext key in the audit log');
      const issue = audit.body.entries.find((e: any) => e.action === 'keys.issue' && e.target === keyId);
      t.equal(issue.detail.application_id, heavy);
    });

    await t.test('bad query values', async (t) => {
      const res = await control.admin('GET', '/_admin/v1/applications?status=open');
      t.equal(res.status, 400);
      t.equal(res.body.errors[0].field, 'status');
    });
  });
});
