// svcctl's indexer client: a 429 waited out as Retry-After says (at most a minute) and retried,
// a problem's detail and code quoted, a body that is not JSON and an unreachable indexer named,
// and the indexer's URL taken from --indexer (checked) or control's status.
import t from 'tap';
import type { AdminClient } from '../../cli/client';
import { CliError, UsageError } from '../../cli/exit-codes';
import { INDEXER_RATE_LIMIT_RETRIES, IndexerClient } from '../../cli/indexer-client';

const answer = (status: number, body: string, headers: Record<string, string> = {}) => new Response(body, { status, headers });

t.test('a 429 is waited out and retried', async (t) => {
  const waits: number[] = [];
  const answers = [answer(429, '', { 'retry-after': '3' }), answer(429, '', { 'retry-after': '600' }), answer(200, '{"ok":true}')];
  const client = new IndexerClient({ fetch: async () => answers.shift()!, sleep: async (ms) => void waits.push(ms) });
  t.same(await client.get('http://indexer/api/stats'), { ok: true });
  t.same(waits, [3_000, 60_000], 'Retry-After seconds, at most a minute');
});

t.test('retries end', async (t) => {
  let calls = 0;
  const client = new IndexerClient({
    fetch: async () => (calls++, answer(429, '{"detail":"slow down","code":"svc_rate_limited"}')),
    sleep: async () => {},
  });
  await t.rejects(client.get('http://indexer/x'), /indexer answered 429 for http:\/\/indexer\/x: slow down \(svc_rate_limited\)/);
  t.equal(calls, INDEXER_RATE_LIMIT_RETRIES + 1);
});

t.test('errors name what went wrong', async (t) => {
  const problem = new IndexerClient({ fetch: async () => answer(404, '{"detail":"no call 1","code":"svc_not_found","status":404}') });
  await t.rejects(problem.get('http://indexer/p'), new CliError('indexer answered 404 for http://indexer/p: no call 1 (svc_not_found)'));
  const plain = new IndexerClient({ fetch: async () => answer(502, '<html>bad gateway</html>') });
  await t.rejects(plain.get('http://indexer/p'), new CliError('indexer answered 502 for http://indexer/p'));
  const notJson = new IndexerClient({ fetch: async () => answer(200, 'hello') });
  await t.rejects(notJson.get('http://indexer/p'), /with a body that is not JSON/);
  const down = new IndexerClient({ fetch: async () => Promise.reject(new TypeError('fetch failed')) });
  await t.rejects(down.get('http://indexer/p'), /indexer not reachable at http:\/\/indexer\/p \(connection failed\)/);
});

t.test('the indexer’s URL', async (t) => {
  const client = new IndexerClient();
  const admin = (indexer: string | null) => ({ get: async () => ({ urls: { indexer } }) }) as unknown as AdminClient;
  t.equal(await client.resolve(admin(null), 'http://idx:7072/'), 'http://idx:7072', '--indexer, without its trailing slash');
  await t.rejects(client.resolve(admin(null), 'ftp://idx'), UsageError, 'not an http(s) URL: a usage error');
  t.equal(await client.resolve(admin('http://from-status:1/'), undefined), 'http://from-status:1', 'else control’s status');
  await t.rejects(client.resolve(admin(null), undefined), /control reports no indexer URL; pass --indexer/);
});
