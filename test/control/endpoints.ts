/**
 * Wrapped endpoints through the admin API: add, list, show, update, remove; every invalid id,
 * upstream, number and injected header is refused with a field error; injected header values
 * are write-only.
 */
import t from 'tap';
import { manualClock, startTestControl } from '../fixtures/control';
import { snapshotEndpoint } from '../../control/sync/snapshot';
import { forEachStore } from '../fixtures/stores';

const UPSTREAM = 'http://127.0.0.1:9/api';

forEachStore(t, (t, kind) => {
  t.test('add, list, show, update, remove', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now });

    const added = await control.admin('POST', '/_admin/v1/endpoints', { id: 'echo', upstream: UPSTREAM });
    t.equal(added.status, 201);
    t.equal(added.body.id, 'echo');
    t.equal(added.body.upstream, UPSTREAM);
    t.same(added.body.methods, ['POST'], 'POST by default');
    t.equal(added.body.timeout_ms, control.config.endpoints.timeoutMs, 'timeout from config');
    t.equal(added.body.sla_ms, control.config.endpoints.slaMs, 'SLA from config');
    t.equal(added.body.price, 0);
    t.equal(added.body.premium, 0);
    t.same(added.body.injected_headers, []);
    t.equal(added.body.billing, 'postpaid', 'postpaid by default');
    t.type(added.body.version, 'number');

    const full = await control.admin('POST', '/_admin/v1/endpoints', {
      id: 'search-2_x',
      upstream: 'https://api.example.com/v2',
      methods: ['GET', 'PUT'],
      price: 1500,
      premium: 30,
      sla_ms: 800,
      timeout_ms: 5000,
      refund_cap_per_hour: 1_000_000,
      treasury_fee_bps: 250,
    });
    t.equal(full.status, 201);
    t.same([...full.body.methods].sort(), ['GET', 'POST', 'PUT'], 'POST is always allowed');
    t.match(full.body, { price: 1500, premium: 30, sla_ms: 800, timeout_ms: 5000, refund_cap_per_hour: 1_000_000, treasury_fee_bps: 250 });

    const list = await control.admin('GET', '/_admin/v1/endpoints');
    t.equal(list.status, 200);
    t.same(
      list.body.endpoints.map((e: { id: string }) => e.id),
      ['echo', 'search-2_x'],
    );

    const show = await control.admin('GET', '/_admin/v1/endpoints/search-2_x');
    t.equal(show.status, 200);
    const { version: _v, ...view } = full.body;
    t.same(show.body, view, 'show matches the add answer');

    clock.advance(1000);
    const updated = await control.admin('PATCH', '/_admin/v1/endpoints/echo', { price: 5, methods: ['GET'] });
    t.equal(updated.status, 200);
    t.equal(updated.body.price, 5);
    t.same([...updated.body.methods].sort(), ['GET', 'POST']);
    t.equal(updated.body.upstream, UPSTREAM, 'unnamed fields keep their value');
    t.equal(updated.body.created_at, added.body.created_at, 'created_at kept');
    t.equal(updated.body.updated_at, new Date(clock.now()).toISOString(), 'updated_at moves');
    t.ok(updated.body.version > full.body.version, 'bumps the state version');

    const removed = await control.admin('DELETE', '/_admin/v1/endpoints/echo');
    t.equal(removed.status, 200);
    t.same({ id: removed.body.id, removed: removed.body.removed }, { id: 'echo', removed: true });
    t.ok(removed.body.version > updated.body.version);
    const gone = await control.admin('GET', '/_admin/v1/endpoints/echo');
    t.equal(gone.status, 404, 'show after remove: 404');
    t.equal(gone.body.code, 'svc_not_found');
    const again = await control.admin('DELETE', '/_admin/v1/endpoints/echo');
    t.equal(again.status, 404, 'remove twice: 404');
    const patchGone = await control.admin('PATCH', '/_admin/v1/endpoints/echo', { price: 1 });
    t.equal(patchGone.status, 404, 'update after remove: 404');
    const after = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(
      after.body.endpoints.map((e: { id: string }) => e.id),
      ['search-2_x'],
      'list without it',
    );

    const readd = await control.admin('POST', '/_admin/v1/endpoints', { id: 'echo', upstream: UPSTREAM });
    t.equal(readd.status, 201, 'a removed id can be added again');
    t.equal(readd.body.price, 0, 'as a fresh endpoint');

    const audit = await control.admin('GET', '/_admin/v1/audit');
    const actions = audit.body.entries
      .filter((e: { action: string }) => e.action.startsWith('endpoints.'))
      .map((e: { action: string; target: string }) => `${e.action} ${e.target}`);
    t.same(
      actions.sort(),
      ['endpoints.add echo', 'endpoints.add echo', 'endpoints.add search-2_x', 'endpoints.remove echo', 'endpoints.update echo'].sort(),
    );
  });

  t.test('validation', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const bad: [string, Record<string, unknown>, string][] = [
      ['uppercase id', { id: 'Echo', upstream: UPSTREAM }, 'id'],
      ['leading dash', { id: '-x', upstream: UPSTREAM }, 'id'],
      ['leading underscore', { id: '_x', upstream: UPSTREAM }, 'id'],
      ['reserved v1', { id: 'v1', upstream: UPSTREAM }, 'id'],
      ['reserved health', { id: 'health', upstream: UPSTREAM }, 'id'],
      ['reserved metrics', { id: 'metrics', upstream: UPSTREAM }, 'id'],
      ['64 characters', { id: 'a'.repeat(64), upstream: UPSTREAM }, 'id'],
      ['slash in id', { id: 'a/b', upstream: UPSTREAM }, 'id'],
      ['empty id', { id: '', upstream: UPSTREAM }, 'id'],
      ['ftp upstream', { id: 'x', upstream: 'ftp://files.example.com' }, 'upstream'],
      ['credentials in upstream', { id: 'x', upstream: 'http://user:pw@example.com' }, 'upstream'],
      ['relative upstream', { id: 'x', upstream: '/api' }, 'upstream'],
      ['upstream with query', { id: 'x', upstream: 'http://example.com/api?key=1' }, 'upstream'],
      ['upstream with fragment', { id: 'x', upstream: 'http://example.com/api#x' }, 'upstream'],
      ['missing upstream', { id: 'x' }, 'upstream'],
      ['negative price', { id: 'x', upstream: UPSTREAM, price: -1 }, 'price'],
      ['fractional price', { id: 'x', upstream: UPSTREAM, price: 1.5 }, 'price'],
      ['price as a string', { id: 'x', upstream: UPSTREAM, price: '10' }, 'price'],
      ['negative premium', { id: 'x', upstream: UPSTREAM, premium: -5 }, 'premium'],
      ['zero timeout', { id: 'x', upstream: UPSTREAM, timeout_ms: 0 }, 'timeout_ms'],
      ['zero sla', { id: 'x', upstream: UPSTREAM, sla_ms: 0 }, 'sla_ms'],
      ['fee above 100 %', { id: 'x', upstream: UPSTREAM, treasury_fee_bps: 10_001 }, 'treasury_fee_bps'],
      ['unknown billing', { id: 'x', upstream: UPSTREAM, billing: 'credit' }, 'billing'],
      ['unknown method', { id: 'x', upstream: UPSTREAM, methods: ['BREW'] }, 'methods.0'],
      ['empty methods', { id: 'x', upstream: UPSTREAM, methods: [] }, 'methods'],
      ['inject Host', { id: 'x', upstream: UPSTREAM, headers: { Host: 'evil.example' } }, 'headers'],
      ['inject cookie', { id: 'x', upstream: UPSTREAM, headers: { cookie: 'a=b' } }, 'headers'],
      ['inject X-Forwarded-For', { id: 'x', upstream: UPSTREAM, headers: { 'X-Forwarded-For': '1.2.3.4' } }, 'headers'],
      ['bad header name', { id: 'x', upstream: UPSTREAM, headers: { 'Bad Name': 'v' } }, 'headers'],
      ['control character in value', { id: 'x', upstream: UPSTREAM, headers: { 'X-Key': 'a\r\nInjected: 1' } }, 'headers'],
      ['unknown field', { id: 'x', upstream: UPSTREAM, colour: 'blue' }, 'colour'],
    ];
    for (const [why, body, field] of bad) {
      const res = await control.admin('POST', '/_admin/v1/endpoints', body);
      t.equal(res.status, 400, `${why}: 400`);
      t.equal(res.body?.code, 'svc_bad_request', `${why}: svc_bad_request`);
      const fields = (res.body?.errors ?? []).map((e: { field: string }) => e.field);
      t.ok(fields.includes(field), `${why}: errors name ${field} (got ${JSON.stringify(fields)})`);
    }
    const list = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(list.body.endpoints, [], 'nothing refused was created');

    const longest = await control.admin('POST', '/_admin/v1/endpoints', { id: 'a'.repeat(63), upstream: UPSTREAM });
    t.equal(longest.status, 201, '63 characters is the longest id');
    const digits = await control.admin('POST', '/_admin/v1/endpoints', { id: '0x', upstream: 'https://example.com' });
    t.equal(digits.status, 201, 'a leading digit is fine');

    const dup = await control.admin('POST', '/_admin/v1/endpoints', { id: '0x', upstream: UPSTREAM });
    t.equal(dup.status, 409, 'duplicate add: 409');
    t.equal(dup.body.code, 'svc_conflict');
    const kept = await control.admin('GET', '/_admin/v1/endpoints/0x');
    t.equal(kept.body.upstream, 'https://example.com', 'the existing endpoint is unchanged');

    for (const [why, body] of [
      ['empty update', {}],
      ['id in update', { id: 'other' }],
      ['bad upstream in update', { upstream: 'ftp://x' }],
      ['zero timeout in update', { timeout_ms: 0 }],
    ] as const) {
      const res = await control.admin('PATCH', '/_admin/v1/endpoints/0x', body);
      t.equal(res.status, 400, `${why}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
    }
    const missing = await control.admin('PATCH', '/_admin/v1/endpoints/nope', { price: 1 });
    t.equal(missing.status, 404, 'update of an unknown endpoint: 404');
  });

  t.test('an upstream with dot segments is refused as typed, on add and on update', async (t) => {
    // `new URL` resolves these away (`http://h/a/../../etc` parses as `http://h/etc`), so the
    // check reads what was typed.
    const control = await startTestControl(t, { store: kind });
    const base = await control.admin('POST', '/_admin/v1/endpoints', { id: 'base', upstream: UPSTREAM });
    t.equal(base.status, 201);
    const dotted = [
      'http://example.com/a/../../etc',
      'http://example.com/a/..',
      'http://example.com/./api',
      'http://example.com/api/.',
      'http://example.com/a/%2e%2e/etc',
      'http://example.com/a/%2E%2E/etc',
      'http://example.com/a/.%2e/etc',
      'http://example.com/a/%2e./etc',
      'http://example.com/a/%2e/etc',
      'http://example.com/a/%252e%252e/etc',
      'http://example.com/a/..;x/etc',
      'https://example.com:8443/v1/../admin',
    ];
    for (const upstream of dotted) {
      for (const [method, path, body] of [
        ['POST', '/_admin/v1/endpoints', { id: 'dots', upstream }],
        ['PATCH', '/_admin/v1/endpoints/base', { upstream }],
      ] as const) {
        const res = await control.admin(method, path, body);
        t.equal(res.status, 400, `${method} ${upstream}: 400`);
        t.equal(res.body?.code, 'svc_bad_request');
        t.match(res.body?.errors, [{ field: 'upstream', message: /dot segments/ }], `${method} ${upstream}: names upstream and says why`);
      }
    }
    const list = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(
      list.body.endpoints.map((e: { id: string; upstream: string }) => [e.id, e.upstream]),
      [['base', UPSTREAM]],
      'nothing refused was stored',
    );

    // Dots that are not whole segments are ordinary path characters.
    for (const [i, upstream] of [
      'http://example.com/a/.../b',
      'http://example.com/.well-known/x',
      'http://example.com/v1..2/a.b',
    ].entries()) {
      const res = await control.admin('POST', '/_admin/v1/endpoints', { id: `dots${i}`, upstream });
      t.equal(res.status, 201, `${upstream}: accepted`);
      t.equal(res.body.upstream, upstream, 'stored as typed');
    }
  });

  t.test('injected header values are write-only', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const secret1 = 'upstream-secret-AAAA-1111';
    const secret2 = 'upstream-secret-BBBB-2222';

    const added = await control.admin('POST', '/_admin/v1/endpoints', {
      id: 'paid',
      upstream: UPSTREAM,
      headers: { 'X-Api-Key': secret1, 'X-Tenant': 'acme-tenant-value' },
    });
    t.equal(added.status, 201);
    t.same(added.body.injected_headers, ['X-Api-Key', 'X-Tenant'], 'names are shown');

    const updated = await control.admin('PATCH', '/_admin/v1/endpoints/paid', { headers: { Authorization: `Bearer ${secret2}` } });
    t.equal(updated.status, 200);
    t.same(updated.body.injected_headers, ['Authorization'], 'headers are replaced as a whole');

    const priceOnly = await control.admin('PATCH', '/_admin/v1/endpoints/paid', { price: 2 });
    t.same(priceOnly.body.injected_headers, ['Authorization'], 'an update without headers keeps them');

    const show = await control.admin('GET', '/_admin/v1/endpoints/paid');
    const list = await control.admin('GET', '/_admin/v1/endpoints');
    const audit = await control.admin('GET', '/_admin/v1/audit');
    const answers: [string, string][] = [
      ['add', added.text],
      ['update', updated.text],
      ['update without headers', priceOnly.text],
      ['show', show.text],
      ['list', list.text],
      ['audit log', audit.text],
    ];
    for (const [label, text] of answers) {
      t.notOk(text.includes(secret1), `${label}: first value absent`);
      t.notOk(text.includes(secret2), `${label}: second value absent`);
      t.notOk(text.includes('acme-tenant-value'), `${label}: every value absent`);
    }
    t.ok(show.text.includes('Authorization') && list.text.includes('Authorization'), 'show and list name the header');
    t.ok(audit.text.includes('X-Api-Key') && audit.text.includes('Authorization'), 'the audit log names the headers');

    // The values are kept for the gateway: stored, just never shown.
    const row = await control.handle.ctx.store.endpoints.record('paid');
    t.same(row?.headers, { Authorization: `Bearer ${secret2}` }, 'the value is stored');
  });

  t.test('upstream URLs are checked as typed, on add and on update', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const base = await control.admin('POST', '/_admin/v1/endpoints', { id: 'base', upstream: UPSTREAM });
    t.equal(base.status, 201);

    const refused: [string, string, RegExp][] = [
      ['CR/LF in the path', 'http://example.com/api\r\nX-Injected: 1', /control characters/],
      ['LF in the host', 'http://exam\nple.com/api', /control characters/],
      ['tab (the URL parser would drop it)', 'http://example.com/a\tpi', /control characters/],
      ['NUL', 'http://example.com/\u0000', /control characters/],
      ['ESC', 'http://example.com/\u001b[2J', /control characters/],
      ['C1 (U+0085)', 'http://example.com/\u0085', /control characters/],
      ['trailing CR/LF', 'http://example.com/api\r\n', /control characters/],
      ['leading space', ' http://example.com/api', /spaces/],
      ['space in the path', 'http://example.com/a pi', /spaces/],
      ['credentials', 'http://user:pw@example.com/api', /credentials/],
      ['user only', 'https://user@example.com', /credentials/],
      ['empty credentials', 'http://@example.com/api', /credentials/],
      ['empty user and password', 'http://:@example.com/api', /credentials/],
      ['fragment', 'http://example.com/api#part', /fragment/],
      ['empty fragment', 'http://example.com/api#', /fragment/],
      ['empty query', 'http://example.com/api?', /query/],
      ['ftp', 'ftp://files.example.com/pub', /scheme ftp:/],
      ['javascript', 'javascript:alert(1)', /scheme javascript:/],
      ['data', 'data:text/plain,hi', /scheme data:/],
      ['file', 'file:///etc/passwd', /scheme file:/],
      ['no slashes after the scheme', 'http:example.com/api', /absolute http/],
      ['one slash after the scheme', 'http:/example.com/api', /absolute http/],
      ['backslashes', 'http:\\\\example.com\\api', /backslash/],
      ['relative', '/api', /absolute http/],
      ['empty', '', /absolute http/],
    ];
    for (const [why, upstream, message] of refused) {
      for (const [method, path, body] of [
        ['POST', '/_admin/v1/endpoints', { id: 'x', upstream }],
        ['PATCH', '/_admin/v1/endpoints/base', { upstream }],
      ] as const) {
        const res = await control.admin(method, path, body);
        t.equal(res.status, 400, `${method} ${why}: 400`);
        t.equal(res.body?.code, 'svc_bad_request', `${method} ${why}: svc_bad_request`);
        const errors: { field: string; message: string }[] = res.body?.errors ?? [];
        t.ok(
          errors.some((e) => e.field === 'upstream' && message.test(e.message)),
          `${method} ${why}: upstream named, ${message} (got ${JSON.stringify(errors)})`,
        );
      }
    }
    const list = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(
      list.body.endpoints.map((e: { id: string; upstream: string }) => [e.id, e.upstream]),
      [['base', UPSTREAM]],
      'nothing was added or changed',
    );

    for (const upstream of ['https://api.example.com/v2', 'http://127.0.0.1:8080', 'HTTPS://Api.Example.com/v1/', 'http://[::1]:9/x%20y']) {
      const res = await control.admin('PATCH', '/_admin/v1/endpoints/base', { upstream });
      t.equal(res.status, 200, `${upstream}: accepted (${res.text.slice(0, 200)})`);
      t.equal(res.body.upstream, upstream, `${upstream}: stored as typed`);
    }
  });

  t.test('response schemas: JSON Schema 2020-12 is stored whole; one that does not compile is refused on add and update', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { money: { type: 'integer', minimum: 0 } },
      type: 'object',
      required: ['kind'],
      properties: {
        kind: { enum: ['card', 'bank'] },
        amount: { $ref: '#/$defs/money' },
        ref: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' },
      },
      oneOf: [{ required: ['amount'] }, { required: ['ref'] }],
      if: { properties: { kind: { const: 'card' } } },
      then: { required: ['last4'] },
      unevaluatedProperties: { type: 'string' },
    };
    const added = await control.admin('POST', '/_admin/v1/endpoints', { id: 'typed', upstream: UPSTREAM, response_schema: schema });
    t.equal(added.status, 201, added.text.slice(0, 300));
    t.same(added.body.response_schema, schema, 'stored as sent');

    const refused: [string, Record<string, unknown>, RegExp][] = [
      ['unknown keyword', { type: 'object', requried: ['id'] }, /unknown keyword: "requried"/],
      ['a $ref to nothing', { $ref: '#/$defs/none' }, /can't resolve reference/],
      ['a remote $ref', { $ref: 'https://schemas.example/x.json' }, /can't resolve reference/],
      ['a broken pattern', { type: 'string', pattern: '([a-z]' }, /Invalid regular expression/],
      ['an unknown format', { type: 'string', format: 'postcode' }, /unknown format "postcode"/],
      ['a wrong type name', { type: 'float' }, /#\/type: must be/],
      ['another draft', { $schema: 'http://json-schema.org/draft-07/schema#' }, /only draft 2020-12/],
    ];
    for (const [why, bad, message] of refused) {
      for (const [method, path, body] of [
        ['POST', '/_admin/v1/endpoints', { id: 'x', upstream: UPSTREAM, response_schema: bad }],
        ['PATCH', '/_admin/v1/endpoints/typed', { response_schema: bad }],
      ] as const) {
        const res = await control.admin(method, path, body);
        t.equal(res.status, 400, `${method} ${why}: 400`);
        t.match(res.headers.get('content-type'), /^application\/problem\+json/, `${method} ${why}: problem+json`);
        t.equal(res.body?.code, 'svc_bad_request', `${method} ${why}: svc_bad_request`);
        const errors: { field: string; message: string }[] = res.body?.errors ?? [];
        t.ok(
          errors.some((e) => e.field === 'response_schema' && message.test(e.message)),
          `${method} ${why}: response_schema named, ${message} (got ${JSON.stringify(errors)})`,
        );
      }
    }
    const list = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(
      list.body.endpoints.map((e: { id: string; response_schema: unknown }) => [e.id, e.response_schema]),
      [['typed', schema]],
      'nothing refused was stored',
    );
  });
});

forEachStore(t, (t, kind) => {
  t.test('billing: postpaid by default, prepaid set and unset, sent to gateways only when prepaid', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const sent = async (id: string) => snapshotEndpoint((await control.handle.ctx.store.endpoints.byId(id))!);
    t.equal((await control.admin('POST', '/_admin/v1/endpoints', { id: 'later', upstream: UPSTREAM })).body.billing, 'postpaid');
    t.notOk('billing' in (await sent('later')), 'a postpaid endpoint’s snapshot line is as before billing existed');

    const prepaid = await control.admin('POST', '/_admin/v1/endpoints', { id: 'paid', upstream: UPSTREAM, billing: 'prepaid' });
    t.equal(prepaid.status, 201, prepaid.text);
    t.equal(prepaid.body.billing, 'prepaid');
    t.equal((await sent('paid')).billing, 'prepaid');

    const changed = await control.admin('PATCH', '/_admin/v1/endpoints/paid', { billing: 'postpaid' });
    t.equal(changed.status, 200);
    t.equal(changed.body.billing, 'postpaid');
    t.ok(changed.body.version > prepaid.body.version, 'a change the gateways get');
    t.notOk('billing' in (await sent('paid')));
    t.equal((await control.admin('PATCH', '/_admin/v1/endpoints/paid', { billing: 'free' })).status, 400);
    const audit = (await control.admin('GET', '/_admin/v1/audit?action=endpoints.update')).body.entries as {
      detail: Record<string, unknown>;
    }[];
    t.match(audit[0]!.detail, { billing: 'postpaid' }, 'audited with the change');
  });
});
