/**
 * The public listeners' dispatch (exact-path memo in front of the router) answers exactly as
 * the router does: 404 and 405 with `Allow` (also the second time, when the path is known),
 * HEAD without a body, queries passed on, odd targets handled by the usual path.
 */
import t from 'tap';
import { startTestControl } from '../fixtures/control';
import { get } from '../fixtures/public';
import { request } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';

forEachStore(t, (t, kind) => {
  t.test('same answers as the router, first and second time', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const api = control.urls.api;
    for (const round of [1, 2]) {
      const post = await control.request(`${api}/api/v1/providers`, {
        method: 'POST',
        headers: { 'user-agent': 'svc-monitor-sdk/0.1.0' },
        body: '{}',
      });
      t.equal(post.status, 405, `round ${round}: POST is 405`);
      t.equal(post.headers.get('allow'), 'GET');
      t.equal(post.body.code, 'svc_method_not_allowed');

      const missing = await get(control, api, '/api/v1/nope');
      t.equal(missing.status, 404, `round ${round}: unknown path 404`);
      t.equal(missing.body.code, 'svc_not_found');

      const ok = await get(control, api, '/api/v1/providers');
      t.equal(ok.status, 200, `round ${round}: 200`);
      const head = await control.request(`${api}/api/v1/providers`, { method: 'HEAD', headers: { 'user-agent': 'svc-monitor-sdk/0.1.0' } });
      t.equal(head.status, 200, `round ${round}: HEAD 200`);
      t.equal(head.text, '', 'HEAD has no body');
      t.equal(head.headers.get('etag'), ok.headers.get('etag'), 'HEAD has the same ETag');
    }

    const bad = await request(api, '/api/v1/%ZZ', { method: 'GET', headers: { 'user-agent': 'svc-monitor-sdk/0.1.0' } });
    t.equal(bad.status, 400, 'malformed percent-encoding: 400');
    t.equal(bad.body.code, 'svc_bad_request');

    const encoded = await request(api, '/api/v1/%70roviders', { method: 'GET', headers: { 'user-agent': 'svc-monitor-sdk/0.1.0' } });
    t.equal(encoded.status, 200, 'a percent-encoded path still reaches its route');

    const query = await get(control, control.urls.indexer, '/api/activity?limit=0');
    t.equal(query.status, 400, 'the query reaches the handler');
    t.equal((await get(control, control.urls.indexer, '/api/activity?limit=1')).status, 200);
  });
});
