/**
 * The applications table family answers the same on every store: rows keep the answers as
 * submitted, the newest recent duplicate is found by content hash, a resubmission never moves
 * `last_submitted_at` back, lists come oldest first, a decision is taken only from `pending`,
 * and the delivery log reads back in the order it was written, without its ids.
 */
import t, { type Test } from 'tap';
import { applicationOf, type NewApplication } from '../../control/store/applications';
import type { Store } from '../../control/store';
import type { Application } from '../../protocol/applications';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = 1_700_000_000_000;
const hash = (n: string) => n.padEnd(64, '0');

const answers = (extra: Partial<Application> = {}): Application => ({
  building: 'an agent that books trains',
  contact_name: 'Ada',
  wallet: null,
  social_url: 'https://example.com/ada',
  messaging_handle: '@ada',
  applicant_type: 'ai_agent',
  apis_paid: ['Maps', 'Rail "fares"'],
  why: null,
  feedback_opt_in: true,
  ...extra,
});

const application = (id: string, extra: Partial<NewApplication> = {}): NewApplication => ({
  id,
  received_at: NOW,
  source: 'api',
  application: answers(),
  content_hash: hash('a'),
  recorded_by: null,
  ...extra,
});

/** A key to approve applications with (the applications table refers to it). */
async function key(store: Store, id: string): Promise<void> {
  await store.mutate({ actor: 'test', now: NOW }, { action: 'key.create' }, (tx) =>
    tx.keys.insert({
      id,
      name: null,
      prefix: `svc_beta_${id}`,
      hash: hash(`k${id}`),
      created_at: NOW,
      created_by: 'test',
      expires_at: null,
      wallet: null,
      endpoints: [],
      limit: null,
      application_id: null,
    }),
  );
}

forEachStore(t, (t, kind) => {
  const open = (t: Test): Promise<Store> => openTestStore(t, kind);

  t.test('a row keeps the answers as submitted', async (t) => {
    const store = await open(t);
    const submitted = answers({ wallet: 'So11111111111111111111111111111111111111112', why: 'ünïcode ✓', feedback_opt_in: false });
    await store.applications.insert(application('app_1', { application: submitted, source: 'direct', recorded_by: 'ops' }));
    const row = (await store.applications.byId('app_1'))!;
    t.same(applicationOf(row), submitted, 'the answers read back as validated');
    t.match(row, {
      id: 'app_1',
      received_at: NOW,
      source: 'direct',
      status: 'pending',
      feedback_opt_in: 0,
      content_hash: hash('a'),
      submissions: 1,
      last_submitted_at: NOW,
      recorded_by: 'ops',
      decided_at: null,
      key_id: null,
      delivery_status: null,
    });
    t.equal(await store.applications.byId('app_2'), undefined, 'an unknown id: undefined');
    await t.rejects(store.applications.insert(application('app_1')), 'an id is stored once');
  });

  t.test('recentByHash finds the newest application with the answers since a time', async (t) => {
    const store = await open(t);
    await store.applications.insert(application('app_old', { received_at: NOW - 10_000 }));
    await store.applications.insert(application('app_new', { received_at: NOW - 1_000 }));
    await store.applications.insert(application('app_other', { received_at: NOW, content_hash: hash('b') }));
    t.equal((await store.applications.recentByHash(hash('a'), NOW - 20_000))?.id, 'app_new', 'the newest of two');
    t.equal((await store.applications.recentByHash(hash('a'), NOW - 1_000))?.id, 'app_new', 'received exactly at `since` counts');
    t.equal(await store.applications.recentByHash(hash('a'), NOW - 999), undefined, 'none since');
    t.equal((await store.applications.recentByHash(hash('b'), NOW))?.id, 'app_other');

    await store.applications.resubmitted('app_new', NOW + 5_000);
    await store.applications.resubmitted('app_new', NOW + 2_000);
    t.match(
      await store.applications.byId('app_new'),
      { submissions: 3, last_submitted_at: NOW + 5_000 },
      'an earlier resubmission never moves it back',
    );
  });

  t.test('lists come oldest first, by status when asked', async (t) => {
    const store = await open(t);
    await key(store, 'k1');
    await store.applications.insert(application('app_c', { received_at: NOW + 1 }));
    await store.applications.insert(application('app_b', { received_at: NOW }));
    await store.applications.insert(application('app_a', { received_at: NOW + 1 }));
    await store.applications.insert(application('app_d', { received_at: NOW + 2 }));
    t.ok(await store.applications.approve('app_a', NOW + 3, 'ops', 'k1'));
    t.same(
      (await store.applications.list()).map((r) => r.id),
      ['app_b', 'app_a', 'app_c', 'app_d'],
      'by received_at, then id',
    );
    t.same(
      (await store.applications.list({ status: 'pending' })).map((r) => r.id),
      ['app_b', 'app_c', 'app_d'],
    );
    t.same(
      (await store.applications.list({ status: 'approved' })).map((r) => r.id),
      ['app_a'],
    );
    t.same(await store.applications.list({ status: 'rejected' }), []);
  });

  t.test('a decision is taken once, only from pending', async (t) => {
    const store = await open(t);
    await key(store, 'k1');
    await key(store, 'k2');
    await store.applications.insert(application('app_1'));
    await store.applications.insert(application('app_2'));
    t.equal(await store.applications.approve('app_1', NOW + 1, 'ops', 'k1'), true, 'pending → approved');
    t.equal(await store.applications.approve('app_1', NOW + 2, 'ops', 'k2'), false, 'approved already');
    t.equal(await store.applications.reject('app_1', NOW + 2, 'ops', null), false, 'an approved one is not rejected');
    t.match(await store.applications.byId('app_1'), { status: 'approved', decided_at: NOW + 1, decided_by: 'ops', key_id: 'k1' });

    t.equal(await store.applications.reject('app_2', NOW + 3, 'lead', 'not a fit'), true, 'pending → rejected');
    t.equal(await store.applications.approve('app_2', NOW + 4, 'ops', 'k2'), false, 'a rejected one is not approved');
    t.match(await store.applications.byId('app_2'), {
      status: 'rejected',
      decided_at: NOW + 3,
      decided_by: 'lead',
      reject_reason: 'not a fit',
      key_id: null,
    });
    t.equal(await store.applications.approve('app_none', NOW, 'ops', 'k1'), false, 'an unknown id: false');
  });

  t.test('the delivery log reads back in order; the latest delivery shows with the row', async (t) => {
    const store = await open(t);
    await key(store, 'k1');
    await store.applications.insert(application('app_1'));
    await store.applications.insert(application('app_2'));
    t.ok(await store.applications.approve('app_1', NOW, 'ops', 'k1'));
    const attempt = {
      application_id: 'app_1',
      key_id: 'k1',
      notifier: 'webhook' as const,
      at: NOW + 1,
      target: 'https://hooks.example/x',
    };
    await store.applications.recordAttempt({ ...attempt, attempt: 1, outcome: 'retrying', http_status: 503, error: 'HTTP 503' });
    await store.applications.recordAttempt({ ...attempt, attempt: 2, at: NOW, outcome: 'delivered', http_status: 200, error: null });
    t.same(
      await store.applications.attempts('app_1'),
      [
        { ...attempt, attempt: 1, outcome: 'retrying', http_status: 503, error: 'HTTP 503' },
        { ...attempt, attempt: 2, at: NOW, outcome: 'delivered', http_status: 200, error: null },
      ],
      'as written, without ids',
    );
    t.same(await store.applications.attempts('app_2'), [], 'another application has none');

    await store.applications.setDelivery('app_1', 'failed', 'webhook', NOW + 5, 'gave up');
    await store.applications.setDelivery('app_1', 'delivered', 'operator', NOW + 6, null);
    t.match(await store.applications.byId('app_1'), {
      delivery_status: 'delivered',
      delivery_notifier: 'operator',
      delivery_at: NOW + 6,
      delivery_error: null,
    });
    t.match(await store.applications.byId('app_2'), { delivery_status: null }, 'only that application');
  });
});
