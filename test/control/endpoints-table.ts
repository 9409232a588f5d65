/**
 * The store's endpoints table answers the same on every store: a save writes every column (the
 * refund caps included) and overwrites, a removal is soft, saving a removed endpoint revives it,
 * and reads and counts see only live endpoints.
 */
import t from 'tap';
import type { EndpointRecord } from '../../control/store/endpoints';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = 1_700_000_000_000;

const endpoint = (id: string, extra: Partial<EndpointRecord> = {}): EndpointRecord => ({
  id,
  upstream: `http://127.0.0.1:9/${id}`,
  methods: ['GET', 'POST'],
  timeout_ms: 5_000,
  price: 1_000,
  premium: 100,
  sla_ms: 2_000,
  refund_cap_per_hour: 50_000,
  refund_cap_per_call: 0,
  refund_cap_per_batch: 0,
  treasury_fee_bps: 250,
  headers: { 'x-api-key': 'secret-value' },
  created_at: NOW,
  updated_at: NOW,
  response_schema: null,
  billing: 'postpaid',
  ...extra,
});

forEachStore(t, (t, kind) => {
  t.test('endpoints: save, overwrite, soft removal, revival, count', async (t) => {
    const store = await openTestStore(t, kind);
    const schema = { type: 'object', required: ['ok'] };
    await store.endpoints.save(
      endpoint('paid', {
        display_name: 'Paid API',
        response_schema: schema,
        billing: 'prepaid',
        refund_cap_per_call: 700,
        refund_cap_per_batch: 20_000,
      }),
    );
    await store.endpoints.save(endpoint('echo'));
    t.same(await store.endpoints.byId('paid'), {
      id: 'paid',
      upstream: 'http://127.0.0.1:9/paid',
      methods: '["GET","POST"]',
      timeout_ms: 5_000,
      price: 1_000,
      premium: 100,
      sla_ms: 2_000,
      refund_cap_per_hour: 50_000,
      refund_cap_per_call: 700,
      refund_cap_per_batch: 20_000,
      treasury_fee_bps: 250,
      headers: '{"x-api-key":"secret-value"}',
      created_at: NOW,
      updated_at: NOW,
      removed_at: null,
      response_schema: JSON.stringify(schema),
      display_name: 'Paid API',
      billing: 'prepaid',
    });
    t.same(await store.endpoints.record('echo'), { ...endpoint('echo'), display_name: null }, 'record parses the JSON columns');
    t.same(
      (await store.endpoints.list()).map((e) => e.id),
      ['echo', 'paid'],
    );
    t.equal(await store.endpoints.count(), 2);

    t.equal(await store.endpoints.remove('paid', NOW + 1), true);
    t.equal(await store.endpoints.remove('paid', NOW + 2), false, 'already removed');
    t.equal(await store.endpoints.remove('none', NOW + 2), false, 'unknown');
    t.equal(await store.endpoints.byId('paid'), undefined, 'a removed endpoint is gone from reads');
    t.equal(await store.endpoints.record('paid'), undefined);
    t.equal(await store.endpoints.count(), 1);

    await store.endpoints.save(endpoint('paid', { price: 2_000, created_at: NOW + 5, updated_at: NOW + 5 }));
    const revived = (await store.endpoints.byId('paid'))!;
    t.same(
      [revived.price, revived.created_at, revived.updated_at, revived.removed_at, revived.response_schema, revived.display_name],
      [2_000, NOW, NOW + 5, null, null, null],
      'saved again: revived, overwritten, created_at kept',
    );
    t.equal(await store.endpoints.count(), 2);
  });

  t.test('endpoints: the refund caps are 0 until set, and overwritten by a save', async (t) => {
    const store = await openTestStore(t, kind);
    await store.endpoints.save(endpoint('ep'));
    t.match(await store.endpoints.byId('ep'), { refund_cap_per_hour: 50_000, refund_cap_per_call: 0, refund_cap_per_batch: 0 });
    await store.endpoints.save(endpoint('ep', { refund_cap_per_call: 1, refund_cap_per_batch: Number.MAX_SAFE_INTEGER }));
    t.match(
      await store.endpoints.record('ep'),
      { refund_cap_per_call: 1, refund_cap_per_batch: Number.MAX_SAFE_INTEGER },
      'the largest amount',
    );
    await store.endpoints.save(endpoint('ep', { refund_cap_per_batch: 0 }));
    t.match(await store.endpoints.record('ep'), { refund_cap_per_call: 0, refund_cap_per_batch: 0 });
  });
});
