/**
 * The gateway's one HTTP client to control's sync API: every request carries the sync token,
 * a POST sends JSON and gets control's status and text back whatever the status, a silent
 * control ends a POST at its timeout, and the stream is a GET asking for NDJSON.
 */
import t, { type Test } from 'tap';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SyncHttp } from '../../protocol/sync-http';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

async function control(t: Test, answer: (seen: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(s);
      answer(s, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  t.teardown(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

t.test('a POST sends JSON with the sync token and returns status and text', async (t) => {
  const c = await control(t, (s, res) => {
    res.writeHead(s.url === '/_sync/v1/outcomes' ? 200 : 409, { 'content-type': 'application/json' });
    res.end(`{"got":${s.body.length}}`);
  });
  const client = new SyncHttp({ controlUrl: c.url, syncToken: 'sync-token-123', maxSockets: 1 });
  t.teardown(() => client.close());
  t.same(await client.post('/_sync/v1/outcomes', '{"records":[]}'), { status: 200, text: '{"got":14}' });
  t.same(
    await client.post('/_sync/v1/ack', Buffer.from('{}')),
    { status: 409, text: '{"got":2}' },
    'another status is an answer, not an error',
  );
  t.equal(c.seen[0]!.method, 'POST');
  t.equal(c.seen[0]!.headers.authorization, 'Bearer sync-token-123');
  t.equal(c.seen[0]!.headers['content-type'], 'application/json');
  t.equal(c.seen[0]!.headers['content-length'], '14');
  t.equal(c.seen[0]!.body, '{"records":[]}');
});

t.test('a control that does not answer ends the POST at its timeout', async (t) => {
  const c = await control(t, () => undefined);
  const client = new SyncHttp({ controlUrl: c.url, syncToken: 'x', maxSockets: 1 });
  t.teardown(() => client.close());
  await t.rejects(client.post('/_sync/v1/outcomes', '{}', 200), /control did not answer within 0.2 s/);
});

t.test('a refused connection rejects the POST', async (t) => {
  const c = await control(t, (_s, res) => res.end());
  const url = c.url;
  const client = new SyncHttp({ controlUrl: url.replace(/:\d+$/, ':1'), syncToken: 'x', maxSockets: 1 });
  t.teardown(() => client.close());
  await t.rejects(client.post('/_sync/v1/ack', '{}'), { code: 'ECONNREFUSED' });
});

t.test('the stream is a GET for NDJSON with the sync token, relative to the control URL', async (t) => {
  const c = await control(t, (_s, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end('{"type":"ping","version":0}\n');
  });
  const client = new SyncHttp({ controlUrl: `${c.url}/`, syncToken: 'sync-token-123', maxSockets: 1 });
  t.teardown(() => client.close());
  const url = client.url('/_sync/v1/stream');
  url.searchParams.set('gateway_id', 'gw-1');
  const body = await new Promise<string>((resolve, reject) => {
    const req = client.stream(url);
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve(text));
    });
  });
  t.equal(body, '{"type":"ping","version":0}\n');
  t.match(c.seen[0], {
    method: 'GET',
    url: '/_sync/v1/stream?gateway_id=gw-1',
    headers: { authorization: 'Bearer sync-token-123', accept: 'application/x-ndjson' },
  });
});
