/**
 * svc-monitor-sdk's `account()` and `calls()` against a real stack (control and a gateway from
 * the built CLI, a test upstream): the key's account after calls made through the gateway and
 * settled by the real settler, its calls page by page, one key never seeing another's, and key
 * misuse (no key in the client, a revoked key) as errors. The key goes to the public API only
 * for these two reads.
 */
import t from 'tap';
import { SVC_UNAUTHORIZED, SvcClient, SvcError, type FetchLike } from 'svc-monitor-sdk';
import { GENEROUS_LIMITS, drained, startStack } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

/** The global fetch, recording each request's URL and whether it carried a key. */
function recording(): { fetch: FetchLike; log: { url: string; authorization: string | null }[] } {
  const log: { url: string; authorization: string | null }[] = [];
  return {
    log,
    fetch: async (url, init) => {
      log.push({ url, authorization: new Headers(init.headers).get('authorization') });
      return fetch(url, init);
    },
  };
}

t.test('account() and calls() read the key’s own account', async (t) => {
  const stack = await startStack(t, { controlEnv: { ...GENEROUS_LIMITS, SVC_CACHE_STATS_TTL_S: '1', SVC_SETTLER_CADENCE_MS: '3600000' } });
  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, price: 2000, premium: 100 });
  const a = await stack.issueKey({ name: 'agent-a' });
  const b = await stack.issueKey({ name: 'agent-b' });
  await stack.applied(await stack.setFlag('beta_gate_enabled', true));
  await stack.fundPool();
  const urls = { gatewayUrl: stack.gateway, apiUrl: stack.control.urls.api!, indexerUrl: stack.control.urls.indexer! };
  const recorded = recording();
  const agentA = new SvcClient({ ...urls, key: a.key, fetch: recorded.fetch });
  const agentB = new SvcClient({ ...urls, key: b.key });

  const aIds: string[] = [];
  for (let i = 0; i < 3; i++) aIds.push((await agentA.call('ep', `a${i}`, { body: 'x' })).callId!);
  const bId = (await agentB.call('ep', 'b', { body: 'x' })).callId!;
  await drained(stack.gateway);

  const before = await agentA.account();
  t.match(before, {
    key_id: a.id,
    name: 'agent-a',
    status: 'active',
    calls: 3,
    outcomes: { ok: 3, server_error: 0 },
    refunds: { settled: 0, pending: 0 },
    premiums: { settled: 0, pending: 300 },
    unsettled_calls: 3,
    limits: { source: 'default' },
  });
  t.type(before.last_call_at, 'string');

  const run = await stack.admin('POST', '/_admin/v1/settler/run-once', {});
  t.equal(run.status, 200, run.text);
  // Another window is another cache entry: the answer after settlement.
  const week = await agentA.account({ window: '7d' });
  t.match(week, { calls: 3, premiums: { settled: 300, pending: 0 }, unsettled_calls: 0 });

  const seen: string[] = [];
  let pages = 0;
  for await (const page of agentA.calls({ limit: 2 })) {
    pages++;
    for (const call of page.calls) {
      seen.push(call.call_id);
      t.match(call, { outcome: 'ok', status: 200, premium: 100, refund: 0 });
      t.type(call.settled_batch, 'number');
    }
  }
  t.equal(pages, 2, 'two pages of two and one, following next_before');
  t.same(seen, [...aIds].reverse(), "A's calls, newest first, by the X-Svc-Call-Id each call was answered with");
  const verdict = await agentA.verifyRefund(seen[0]!);
  t.ok(verdict.ok, 'a listed call id is what verifyRefund takes');
  t.ok((await agentA.verifyRefund(seen[0]!.toUpperCase())).ok, 'in capitals too');

  const bSeen: string[] = [];
  for await (const page of agentB.calls()) bSeen.push(...page.calls.map((c) => c.call_id));
  t.same(bSeen, [bId], "B sees its one call, none of A's");

  const withKey = recorded.log.filter((r) => r.authorization !== null).map((r) => new URL(r.url));
  t.ok(
    withKey.every((u) => u.origin === new URL(urls.gatewayUrl).origin || u.pathname.startsWith('/api/v1/account')),
    'the key went to the gateway and to the account reads only',
  );
  await agentA.providers();
  t.equal(recorded.log[recorded.log.length - 1]!.authorization, null, 'no key on other public reads');

  await t.rejects(new SvcClient(urls).account(), { code: 'svc_sdk_config' }, 'no key in the client: svc_sdk_config before any request');
  const revoke = await stack.admin('POST', `/_admin/v1/keys/${b.id}/revoke`, {});
  t.equal(revoke.status, 200);
  const err = await agentB.account().then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, SvcError);
  t.match(err, { status: 401, code: SVC_UNAUTHORIZED });
  t.notOk(JSON.stringify(err).includes(b.key) || String(err).includes(b.key), 'the key is not in the error');
});
