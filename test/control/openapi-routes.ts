/**
 * The OpenAPI documents match control's routers both ways: every route registered on the
 * public, indexer and control (admin, sync, metrics) routers is documented, and every
 * documented operation is routed; each route reads exactly the query parameters its operation
 * documents, and refuses others when it answers JSON (pages, feeds and metrics ignore them). And each listener serves its document live: the public one
 * behind the User-Agent filter with ETag caching, the indexer's cached, the admin one behind
 * the admin token, all three the exact bytes `npm run openapi` writes.
 */
import t from 'tap';
import { indexerRouter } from '../../control/indexer/server';
import type { Router } from '../../control/http/router';
import { registerApplicationRoutes } from '../../control/applications/routes';
import { publicRouter } from '../../control/public/server';
import { registerIndexerFeedRoutes } from '../../control/public/pages/feeds';
import { renderDocument, type DocumentName } from '../../protocol/openapi';
import { startTestControl, type TestControl } from '../fixtures/control';
import { currentDocument, type Doc } from '../fixtures/openapi';
import { SDK_UA } from '../fixtures/public';

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch']);

/** `GET /api/receipts/{batch}` for each route of the routers (`:batch` written as `{batch}`). */
function routed(routers: Router[]): string[] {
  return routers.flatMap((r) => r.table().map(({ method, pattern }) => `${method} ${pattern.replace(/:([A-Za-z_]+)/g, '{$1}')}`)).sort();
}

function documented(name: DocumentName): string[] {
  const doc = currentDocument(name);
  return Object.entries(doc.paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.has(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    )
    .sort();
}

/** Each document with the routers of the listener it describes. */
function listeners(control: TestControl): [DocumentName, Router[]][] {
  const { admin, sync, metrics } = control.handle.routers;
  return [
    ['public', [publicRouter(control.handle.ctx, [registerApplicationRoutes])]],
    ['indexer', [indexerRouter(control.handle.ctx, [registerIndexerFeedRoutes])]],
    ['admin', [admin, sync, metrics]],
  ];
}

t.test('every routed path is documented and every documented path is routed', async (t) => {
  const control = await startTestControl(t);
  for (const [name, routers] of listeners(control)) {
    const routes = routed(routers);
    const ops = documented(name);
    t.ok(routes.length > 3, `${name}: the router table is not empty (${routes.length} routes)`);
    t.same(
      routes.filter((r) => !ops.includes(r)),
      [],
      `${name}: every route is in the document`,
    );
    t.same(
      ops.filter((o) => !routes.includes(o)),
      [],
      `${name}: every documented operation is routed`,
    );
  }
});

interface DocumentedOperation {
  parameters?: { name: string; in: string }[];
  responses: Record<string, { $ref?: string; content?: Record<string, unknown> }>;
}

/** The content types of an operation's 2xx and 3xx answers (shared answers resolved). */
function successTypes(doc: Doc, op: DocumentedOperation): string[] {
  return Object.entries(op.responses)
    .filter(([status]) => /^[23]/.test(status))
    .flatMap(([, answer]) => {
      const resolved = answer.$ref ? doc.components.responses[answer.$ref.replace('#/components/responses/', '')] : answer;
      return Object.keys(resolved?.content ?? {});
    });
}

t.test('each route reads the query parameters its operation documents; JSON routes refuse others', async (t) => {
  const control = await startTestControl(t);
  for (const [name, routers] of listeners(control)) {
    const doc = currentDocument(name);
    let pages = 0;
    for (const route of routers.flatMap((r) => r.table())) {
      const what = `${name}: ${route.method} ${route.pattern}`;
      const op = doc.paths[route.pattern.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method.toLowerCase()] as
        DocumentedOperation | undefined;
      if (op === undefined) continue; // reported by the test above
      const documented = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      t.same([...route.query].sort(), documented.sort(), `${what}: reads the documented query parameters`);
      const json = successTypes(doc, op).some((type) => /json/.test(type));
      t.equal(
        route.otherQuery,
        json ? 'refuse' : 'ignore',
        `${what}: ${json ? 'answers JSON, refuses' : 'a page, feed or scrape, ignores'} other parameters`,
      );
      if (!json) pages++;
    }
    t.ok(pages > 0, `${name}: some routes are not JSON (${pages})`);
  }
});

t.test('each listener serves its document', async (t) => {
  const control = await startTestControl(t);

  const pub = await control.request(`${control.urls.api}/openapi.json`, { headers: { 'user-agent': SDK_UA } });
  t.equal(pub.status, 200, 'public: 200');
  t.equal(pub.text, renderDocument('public'), 'public: the generated document, byte for byte');
  t.match(pub.headers.get('content-type'), /^application\/json/);
  t.match(pub.headers.get('cache-control'), /^public, max-age=\d+$/, 'public: cached like the other public reads');
  const etag = pub.headers.get('etag')!;
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'public: strong ETag');
  const again = await control.request(`${control.urls.api}/openapi.json`, { headers: { 'user-agent': SDK_UA, 'if-none-match': etag } });
  t.equal(again.status, 304, 'public: If-None-Match → 304');
  const curl = await control.request(`${control.urls.api}/openapi.json`, { headers: { 'user-agent': 'curl/8.5.0' } });
  t.equal(curl.status, 403, 'public: behind the User-Agent filter');
  t.equal(curl.body.code, 'svc_forbidden_user_agent');

  const idx = await control.request(`${control.urls.indexer}/openapi.json`, { headers: { 'user-agent': 'curl/8.5.0' } });
  t.equal(idx.status, 200, 'indexer: 200 (no User-Agent filter there)');
  t.equal(idx.text, renderDocument('indexer'), 'indexer: the generated document');
  t.ok(idx.headers.get('etag'), 'indexer: ETag');

  const anonymous = await control.admin('GET', '/_admin/v1/openapi.json', undefined, null);
  t.equal(anonymous.status, 401, 'admin: 401 without the admin token');
  t.equal(anonymous.body.code, 'svc_unauthorized');
  const wrong = await control.admin('GET', '/_admin/v1/openapi.json', undefined, 'x'.repeat(40));
  t.equal(wrong.status, 401, 'admin: 401 with a wrong token');
  const adm = await control.admin('GET', '/_admin/v1/openapi.json');
  t.equal(adm.status, 200, 'admin: 200 with the admin token');
  t.equal(adm.text, renderDocument('admin'), 'admin: the generated document');
});
