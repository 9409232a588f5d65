/**
 * svc-monitor-sdk against a real stack: control and a gateway from the built CLI and a test
 * upstream, all on port 0. The SDK's requests go through an injected `fetch` wrapper that
 * records each request and answer, so retries are counted on the wire.
 *
 * Covers: a call through the gateway with its x-svc fields (and the outcome control
 * recorded for it); 403 `svc_auth_not_in_beta` without a key; a key's 429 retried after
 * `Retry-After` until admitted; 502 not retried (and retried only with `retry.unsafe`); the
 * public reads through the User-Agent filter; the activity pages followed by cursor; the
 * ETag sent back as `If-None-Match` and the body reused on 304.
 */
import t from 'tap';
import { inspect } from 'node:util';
import { SVC_AUTH_NOT_IN_BETA, SVC_UPSTREAM_UNAVAILABLE, SvcClient, SvcError, type FetchLike } from 'svc-monitor-sdk';
import { GENEROUS_LIMITS, UUID_V7, drained, startStack } from '../fixtures/stack';
import { closedPort, startUpstream } from '../fixtures/upstream';
import { rejection } from '../fixtures/rejection';

interface Exchange {
  url: string;
  method: string;
  request: Headers;
  status: number;
  response: Headers;
}

/** The global fetch, recording every exchange. */
function recording(): { fetch: FetchLike; log: Exchange[] } {
  const log: Exchange[] = [];
  return {
    log,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      log.push({ url, method: init.method ?? 'GET', request: new Headers(init.headers), status: res.status, response: res.headers });
      return res;
    },
  };
}

t.test('svc-monitor-sdk against control, a gateway and an upstream', async (t) => {
  const stack = await startStack(t, { controlEnv: { ...GENEROUS_LIMITS, SVC_CACHE_PROVIDERS_TTL_S: '3600' } });
  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, price: 2000, premium: 100 });
  await stack.addEndpoint({ id: 'down', upstream: `http://127.0.0.1:${await closedPort()}/` });
  const key = await stack.issueKey({ name: 'sdk' });
  const tight = await stack.issueKey({ name: 'tight', limit: { count: 1, window_seconds: 1 } });
  await stack.applied(await stack.setFlag('beta_gate_enabled', true));
  await stack.fundPool();
  const urls = { gatewayUrl: stack.gateway, apiUrl: stack.control.urls.api!, indexerUrl: stack.control.urls.indexer! };
  const callIds: string[] = [];

  await t.test('a call goes through and carries the gateway’s verdict', async (t) => {
    const { fetch, log } = recording();
    const svc = new SvcClient({ ...urls, key: key.key, fetch });
    up.clear();
    const res = await svc.call('ep', 'hello?x=1', { body: { a: 1 } });
    t.equal(res.status, 200);
    t.same(res.body, { ok: true, method: 'POST', url: '/base/hello?x=1' }, "the upstream's answer");
    t.match(res.callId, UUID_V7, 'callId is the UUIDv7 of X-Svc-Call-Id');
    t.equal(res.outcome, 'ok');
    t.equal(res.coverage, 'covered', 'the funded pool covers it');
    t.equal(res.premium, 100, "the endpoint's premium on ok with a key");
    t.equal(res.refund, 0);
    t.type(res.latencyMs, 'number');
    t.equal(up.requests.length, 1);
    t.equal(up.requests[0]!.body.toString(), '{"a":1}', 'the JSON body reached the upstream');
    t.equal(up.requests[0]!.headers.authorization, undefined, 'the key was not forwarded');
    t.equal(log[0]!.request.get('user-agent'), 'svc-monitor-sdk/0.1.0');
    callIds.push(res.callId!);

    await drained(stack.gateway);
    const row = stack.outcomes().find((r) => r.call_id === res.callId);
    t.ok(row, 'control recorded the call under the same id');
    t.equal(row?.outcome, 'ok');
    t.equal(row?.key_id, key.id);
  });

  await t.test('403 svc_auth_not_in_beta without a key', async (t) => {
    const svc = new SvcClient({ gatewayUrl: stack.gateway });
    up.clear();
    const err = await rejection(svc.call('ep', 'hello'));
    t.type(err, SvcError);
    const e = err as SvcError;
    t.equal(e.code, SVC_AUTH_NOT_IN_BETA);
    t.equal(e.status, 403);
    t.equal(e.title, 'Not in beta');
    t.type(e.detail, 'string');
    t.equal(e.callId, null, 'refused before admission: no call id');
    t.equal(up.requests.length, 0);
  });

  await t.test('a 429 is retried after Retry-After and the call goes through', async (t) => {
    const { fetch, log } = recording();
    const svc = new SvcClient({ ...urls, key: tight.key, fetch, retry: { max: 5 } });
    up.clear();
    // One call per second: the first spends the key's only token, so a call made right after
    // is refused and has to wait.
    let retried: Exchange[] | null = null;
    for (let i = 0; i < 5 && retried === null; i++) {
      const before = log.length;
      const res = await svc.call('ep', `n${i}`, { body: 'x' });
      t.equal(res.status, 200, `call ${i + 1} resolved 200`);
      callIds.push(res.callId!);
      const attempts = log.slice(before);
      if (attempts.some((a) => a.status === 429)) retried = attempts;
    }
    t.ok(retried, 'one of the calls met a 429');
    const statuses = retried!.map((a) => a.status);
    t.equal(statuses[statuses.length - 1], 200, 'its last attempt was admitted');
    t.ok(
      statuses.slice(0, -1).every((s) => s === 429),
      `the attempts before were 429: ${statuses.join(', ')}`,
    );
    const refusal = retried!.find((a) => a.status === 429)!;
    t.match(refusal.response.get('retry-after'), /^\d+$/, 'the 429 said when to retry');
    t.equal(up.requests.length, log.filter((a) => a.status === 200).length, 'refused attempts never reached the upstream');
  });

  await t.test('a 502 is not retried; retry.unsafe retries it', async (t) => {
    const safe = recording();
    const svc = new SvcClient({ ...urls, key: key.key, fetch: safe.fetch });
    const err = await rejection(svc.call('down', 'x', { body: 'pay once' }));
    t.type(err, SvcError);
    t.match(err, { status: 502, code: SVC_UPSTREAM_UNAVAILABLE, attempts: 1 });
    t.match((err as SvcError).callId, UUID_V7, 'an admitted call: it has a call id');
    t.equal(safe.log.length, 1, 'one request');
    t.notOk(
      `${inspect(err)} ${JSON.stringify(err)} ${inspect(svc)}`.includes(key.key),
      'the key is nowhere in the error or the client as printed',
    );

    const unsafe = recording();
    const retrying = new SvcClient({ ...urls, key: key.key, fetch: unsafe.fetch, retry: { unsafe: true, max: 2, baseDelayMs: 10 } });
    await t.rejects(retrying.call('down', 'x'), { status: 502, code: SVC_UPSTREAM_UNAVAILABLE, attempts: 3 });
    t.same(
      unsafe.log.map((a) => a.status),
      [502, 502, 502],
      'first attempt and two retries',
    );
    t.equal(new Set(unsafe.log.map((a) => a.response.get('x-svc-call-id'))).size, 3, 'each attempt was its own call');
  });

  await t.test('public reads pass the User-Agent filter', async (t) => {
    const plain = await fetch(`${urls.apiUrl}/api/v1/providers`);
    t.equal(plain.status, 403, 'a plain Node fetch is refused by the filter');
    t.equal(((await plain.json()) as { code: string }).code, 'svc_forbidden_user_agent');

    const { fetch: f, log } = recording();
    const svc = new SvcClient({ ...urls, key: key.key, fetch: f });
    const providers = await svc.providers();
    t.equal(providers.providers.length, 2, 'both endpoints are providers');
    t.ok(
      providers.providers.every((p) => p.id.startsWith('prv_')),
      'opaque ids',
    );

    const status = await svc.status();
    t.equal(status.version, 'v1');
    t.equal(status.beta_gate.enabled, true, 'the gate we switched on');

    const changelog = await svc.changelog({ limit: 5 });
    t.ok(
      changelog.entries.some((e) => e.kind === 'flag'),
      'the gate change is in the changelog',
    );

    await drained(stack.gateway);
    const total = stack.outcomes().length;
    const stats = await svc.stats();
    t.equal(stats.total_calls, total, 'stats count every recorded call');

    const pages: string[][] = [];
    for await (const page of svc.activity({ limit: 2 })) pages.push(page.activity.map((a) => a.call_id));
    t.equal(pages.length, Math.ceil(total / 2), `${total} calls in pages of 2`);
    const seen = pages.flat();
    t.equal(seen.length, total, 'every call once');
    t.equal(new Set(seen).size, total, 'no call twice');
    const activityRequests = log.filter((a) => a.url.includes('/api/activity'));
    t.notOk(new URL(activityRequests[0]!.url).searchParams.has('before'), 'the first page has no cursor');
    t.ok(
      activityRequests.slice(1).every((a) => new URL(a.url).searchParams.get('before')),
      'later pages follow the cursor',
    );

    t.ok(
      log.every((a) => a.request.get('user-agent') === 'svc-monitor-sdk/0.1.0'),
      'every read sent the SDK User-Agent',
    );
    t.ok(
      log.every((a) => !a.request.has('authorization')),
      'the key is never sent to the public API or the indexer',
    );
  });

  await t.test('a remembered ETag is sent as If-None-Match and the body reused on 304', async (t) => {
    const { fetch: f, log } = recording();
    const svc = new SvcClient({ ...urls, fetch: f });
    const first = await svc.providers();
    const second = await svc.providers();
    t.equal(log.length, 2);
    const etag = log[0]!.response.get('etag');
    t.ok(etag, 'the first answer had an ETag');
    t.equal(log[0]!.request.get('if-none-match'), null, 'nothing to send the first time');
    t.equal(log[1]!.request.get('if-none-match'), etag, 'the second read sent it back');
    t.equal(log[1]!.status, 304, 'the API answered 304');
    t.same(second, first, 'the remembered body is returned');
    t.not(second, first, 'as a fresh object');
  });
});
