/**
 * The wire helpers every listener uses, over real HTTP on port 0: errors leave as
 * problem+json with their headers, unexpected errors never leak their message, and JSON
 * bodies are bounded and validated.
 */
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from '../../protocol/errors';
import { answerProblemsWith, readJson, sendError, sendJson } from '../../runtime/http';

async function serve(t: tap.Test, handler: (req: IncomingMessage, res: ServerResponse) => Promise<void> | void): Promise<string> {
  const server = createServer((req, res) => {
    Promise.resolve()
      .then(() => handler(req, res))
      .catch((err) => sendError(res, err));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a SvcError becomes problem+json with its status, headers and extensions', async (t) => {
  const url = await serve(t, (_req, res) =>
    sendError(res, new SvcError('svc_rate_limited', 'too many', { headers: { 'retry-after': '3' }, extra: { limit: 60 } })),
  );
  const res = await fetch(url);
  t.equal(res.status, 429);
  t.equal(res.headers.get('content-type'), 'application/problem+json');
  t.equal(res.headers.get('retry-after'), '3');
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.same(await res.json(), {
    type: 'https://svc.dev/errors#svc_rate_limited',
    title: 'Rate limited',
    status: 429,
    detail: 'too many',
    code: 'svc_rate_limited',
    limit: 60,
  });
});

t.test('an unexpected error is svc_internal and does not leak its message', async (t) => {
  const url = await serve(t, () => {
    throw new Error('db password is hunter2 at /srv/secret/path');
  });
  const res = await fetch(url);
  const text = await res.text();
  t.equal(res.status, 500);
  t.equal(res.headers.get('content-type'), 'application/problem+json');
  t.equal(JSON.parse(text).code, 'svc_internal');
  t.notOk(text.includes('hunter2'), 'the message is not sent');
  t.notOk(text.includes('/srv/secret'), 'nor any path from it');
  t.notOk(text.includes('at '), 'nor a stack trace');
});

t.test('readJson', async (t) => {
  const url = await serve(t, async (req, res) => {
    const body = await readJson(req, 64);
    sendJson(res, 200, { got: body });
  });
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  let res = await post('{"a":1}');
  t.equal(res.status, 200);
  t.same(await res.json(), { got: { a: 1 } }, 'parses JSON');

  res = await post('');
  t.same(await res.json(), { got: {} }, 'an empty body reads as {}');

  res = await post('{"a":');
  t.equal(res.status, 400);
  t.equal(((await res.json()) as { code: string }).code, 'svc_bad_request', 'invalid JSON is a bad request');

  res = await post(JSON.stringify({ pad: 'x'.repeat(100) }));
  t.equal(res.status, 413);
  t.equal(((await res.json()) as { code: string }).code, 'svc_payload_too_large', 'more than the limit is refused');
});

t.test('a public listener sends the public detail, without extension members', async (t) => {
  const err = new SvcError('svc_store_unavailable', 'the PostgreSQL store at postgres://svc:***@db.internal/svc cannot be reached', {
    headers: { 'retry-after': '5' },
    extra: { store: { kind: 'postgres' } },
    publicDetail: 'The data is temporarily unavailable.',
  });
  const url = await serve(t, (req, res) => {
    if (req.url === '/public') answerProblemsWith(res, () => false, 'public');
    sendError(res, err);
  });
  const operators = await fetch(`${url}/admin`);
  t.equal(operators.status, 503);
  t.match(await operators.json(), { detail: err.message, store: { kind: 'postgres' } }, 'operators get all of it');
  const visitors = await fetch(`${url}/public`);
  t.equal(visitors.status, 503);
  t.equal(visitors.headers.get('retry-after'), '5', 'the same headers');
  const body = (await visitors.json()) as Record<string, unknown>;
  t.equal(body.detail, 'The data is temporarily unavailable.');
  t.equal(body.code, 'svc_store_unavailable');
  t.notOk('store' in body, 'no extension member');
});
