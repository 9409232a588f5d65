/**
 * The gateway's one HTTP client to control's sync API: every request carries the sync token,
 * a POST sends JSON and gets control's status and text back whatever the status, a silent
 * control ends a POST at its timeout, and the stream is a GET asking for NDJSON. With several
 * controls, requests go to the current one of a shared `ControlEndpoints`, which moves to the
 * next (wrapping around) once per failure of the current one.
 */
import t, { type Test } from 'tap';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../runtime/log';
import { ControlEndpoints, SyncHttp } from '../../gateway/control-link/sync-http';

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
  await t.rejects(client.post('/_sync/v1/outcomes', '{}', 200), {
    code: 'SVC_ERR_CONTROL_TIMEOUT',
    message: /control did not answer within 0.2 s/,
  });
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

t.test('ControlEndpoints: a failure of the current control moves to the next, once, wrapping around', async (t) => {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', sink: { write: (line: string) => lines.push(line) } });
  const endpoints = new ControlEndpoints(['http://a:1', 'http://b:2', 'http://c:3'], log);
  const moves: [string, string][] = [];
  endpoints.onMove((from, to) => moves.push([from, to]));
  t.equal(endpoints.current, 'http://a:1', 'the first one first');
  endpoints.failed('http://a:1', 'sync stream ended');
  t.equal(endpoints.current, 'http://b:2');
  endpoints.failed('http://a:1', 'a late report about the old one');
  t.equal(endpoints.current, 'http://b:2', 'a failure of a control that is no longer current moves nothing');
  endpoints.failed('http://b:2', null);
  endpoints.failed('http://c:3', null);
  t.equal(endpoints.current, 'http://a:1', 'after the last, the first again');
  t.same(moves, [
    ['http://a:1', 'http://b:2'],
    ['http://b:2', 'http://c:3'],
    ['http://c:3', 'http://a:1'],
  ]);
  t.match(JSON.parse(lines[0]!), {
    level: 'warn',
    msg: 'moving to the next control',
    from: 'http://a:1',
    to: 'http://b:2',
    reason: 'sync stream ended',
  });
  t.equal(lines.length, 3, 'one line per move');

  const single = new ControlEndpoints(['http://a:1']);
  single.onMove(() => t.fail('one control: nowhere to move'));
  single.failed('http://a:1', 'refused');
  t.equal(single.current, 'http://a:1');
  t.throws(() => new ControlEndpoints([]), /no control URL/);
});

t.test('every client sharing a ControlEndpoints sends to the current control', async (t) => {
  const a = await control(t, (_s, res) => res.writeHead(200).end('a'));
  const b = await control(t, (_s, res) => res.writeHead(200).end('b'));
  const endpoints = new ControlEndpoints([a.url, b.url]);
  const one = new SyncHttp({ controlUrl: endpoints, syncToken: 'x', maxSockets: 1 });
  const other = new SyncHttp({ controlUrl: endpoints, syncToken: 'x', maxSockets: 1 });
  t.teardown(() => one.close());
  t.teardown(() => other.close());
  t.equal((await one.post('/_sync/v1/ack', '{}')).text, 'a');
  endpoints.failed(a.url, 'stream ended');
  t.equal((await one.post('/_sync/v1/ack', '{}')).text, 'b', 'the next request goes to the next control');
  t.equal((await other.post('/_sync/v1/outcomes', '{}')).text, 'b', 'for the other client too');
  t.equal(one.url('/_sync/v1/stream').origin, b.url, 'the stream is dialled there too');
  t.equal(a.seen.length, 1);
});
