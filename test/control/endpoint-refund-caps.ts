/**
 * An endpoint's refund caps per call and per batch through the admin API: 0 (no cap) unless
 * set, set on add and update, one at a time, shown by show and list; a negative, fractional,
 * non-number or too large cap is refused with a problem naming the field, and changes nothing.
 */
import t from 'tap';
import { startTestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';

const UPSTREAM = 'http://127.0.0.1:9/api';
const PATH = '/_admin/v1/endpoints';

forEachStore(t, (t, kind) => {
  t.test('set on add and update, shown by show and list', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const plain = await control.admin('POST', PATH, { id: 'plain', upstream: UPSTREAM });
    t.equal(plain.status, 201);
    t.match(plain.body, { refund_cap_per_hour: 0, refund_cap_per_call: 0, refund_cap_per_batch: 0 }, 'no caps by default');

    const added = await control.admin('POST', PATH, {
      id: 'capped',
      upstream: UPSTREAM,
      price: 1500,
      premium: 30,
      refund_cap_per_hour: 1_000_000,
      refund_cap_per_call: 1_200,
      refund_cap_per_batch: 250_000,
    });
    t.equal(added.status, 201);
    t.match(added.body, { refund_cap_per_hour: 1_000_000, refund_cap_per_call: 1_200, refund_cap_per_batch: 250_000 });
    const { version: _v, ...view } = added.body;
    t.same((await control.admin('GET', `${PATH}/capped`)).body, view, 'show matches the add answer');

    const call = await control.admin('PATCH', `${PATH}/capped`, { refund_cap_per_call: 0 });
    t.equal(call.status, 200);
    t.match(call.body, { refund_cap_per_hour: 1_000_000, refund_cap_per_call: 0, refund_cap_per_batch: 250_000 }, 'one cap at a time');
    t.ok(call.body.version > added.body.version, 'a new state version, as for the hourly cap');
    const batch = await control.admin('PATCH', `${PATH}/capped`, { refund_cap_per_batch: Number.MAX_SAFE_INTEGER });
    t.match(batch.body, { refund_cap_per_call: 0, refund_cap_per_batch: Number.MAX_SAFE_INTEGER }, 'the largest amount');

    const list = await control.admin('GET', PATH);
    t.same(
      list.body.endpoints.map((e: Record<string, unknown>) => [e.id, e.refund_cap_per_call, e.refund_cap_per_batch]),
      [
        ['capped', 0, Number.MAX_SAFE_INTEGER],
        ['plain', 0, 0],
      ],
    );
    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.ok(
      audit.body.entries.some(
        (e: { action: string; detail: Record<string, unknown> | null }) =>
          e.action === 'endpoints.update' && e.detail?.refund_cap_per_call === 0,
      ),
      'the audit log records the change',
    );
  });

  t.test('bad caps are refused, naming the field', async (t) => {
    const control = await startTestControl(t, { store: kind });
    t.equal((await control.admin('POST', PATH, { id: 'ep', upstream: UPSTREAM, refund_cap_per_call: 5 })).status, 201);
    const values: [string, unknown][] = [
      ['negative', -1],
      ['fractional', 0.5],
      ['a string', '500'],
      ['null', null],
      ['beyond a safe integer', 2 ** 53],
    ];
    for (const field of ['refund_cap_per_call', 'refund_cap_per_batch']) {
      for (const [why, value] of values) {
        for (const [method, path, body] of [
          ['POST', PATH, { id: 'x', upstream: UPSTREAM, [field]: value }],
          ['PATCH', `${PATH}/ep`, { [field]: value }],
        ] as const) {
          const res = await control.admin(method, path, body);
          const label = `${method} ${field} ${why}`;
          t.equal(res.status, 400, `${label}: 400`);
          t.match(res.headers.get('content-type'), /^application\/problem\+json/, `${label}: problem+json`);
          t.equal(res.body?.code, 'svc_bad_request', `${label}: svc_bad_request`);
          t.match(res.body?.errors, [{ field }], `${label}: names ${field}`);
        }
      }
    }
    const list = await control.admin('GET', PATH);
    t.same(
      list.body.endpoints.map((e: Record<string, unknown>) => [e.id, e.refund_cap_per_call, e.refund_cap_per_batch]),
      [['ep', 5, 0]],
      'nothing refused was stored',
    );
  });
});
