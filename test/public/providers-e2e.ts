/**
 * End to end: real traffic through a real gateway process (built CLI) to a test upstream
 * that fails on command; outcomes travel through the gateway's journal to control; then
 * `GET {api_url}/api/v1/providers` shows each provider's failure rate and tier: RELIABLE,
 * ELEVATED, HIGH_RISK, and UNRATED below tiers.minCalls; client errors are not failures.
 */
import t from 'tap';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { GENEROUS_LIMITS, drained, request, startStack, waitFor } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';
import { SDK_UA } from '../fixtures/public';
import { encodeBase58 } from '../../protocol/base58';

/** The opaque id control publishes for `endpointId`, from the secret in its database. */
function publicId(dataDir: string, endpointId: string): string {
  const db = new Database(join(dataDir, 'control.db'), { readonly: true, fileMustExist: true });
  try {
    const secret = db.prepare('SELECT secret FROM public_secret WHERE id = 1').pluck().get() as Buffer;
    return `prv_${encodeBase58(createHmac('sha256', secret).update(`prv:${endpointId}`).digest()).slice(0, 12)}`;
  } finally {
    db.close();
  }
}

t.test('failure rate and tier per provider from real gateway traffic', async (t) => {
  const upstream = await startUpstream(t);
  const stack = await startStack(t, {
    controlEnv: { ...GENEROUS_LIMITS, SVC_CACHE_PROVIDERS_TTL_S: '1', SVC_TIERS_MIN_CALLS: '20' },
  });
  // Each endpoint is its own path prefix on the one upstream, so each can fail on command.
  const plan: Record<string, { ok: number; fail: number; failWith: 'server' | 'reset' | 'slow'; clientErrors: number }> = {
    steady: { ok: 200, fail: 1, failWith: 'server', clientErrors: 20 }, // 0.5 %
    wobbly: { ok: 97, fail: 3, failWith: 'reset', clientErrors: 0 }, // 3 %
    flaky: { ok: 30, fail: 10, failWith: 'slow', clientErrors: 0 }, // 25 %
    sparse: { ok: 10, fail: 5, failWith: 'server', clientErrors: 30 }, // 15 calls < 20
  };
  let version = 0;
  for (const id of Object.keys(plan)) {
    version = await stack.addEndpoint({ id, upstream: `${upstream.url}/${id}`, sla_ms: 300, timeout_ms: 5_000 });
    upstream.on(`/${id}/fail`, { kind: 'json', status: 503, body: { error: 'down' } });
    upstream.on(`/${id}/missing`, { kind: 'json', status: 404, body: { error: 'no such thing' } });
  }
  upstream.on('/wobbly/fail', { kind: 'reset-before-headers' });
  upstream.on('/flaky/fail', { kind: 'json', status: 200, delayMs: 700 }); // well past the SLA, and ok answers stay well within it on a loaded machine
  await stack.applied(version);

  const outcomes: Record<string, number> = {};
  const call = async (id: string, path: string) => {
    const res = await request(stack.gateway, `/v1/${id}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const outcome = String(res.headers['x-svc-outcome']);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  };
  const jobs: (() => Promise<void>)[] = [];
  for (const [id, p] of Object.entries(plan)) {
    for (let i = 0; i < p.ok; i++) jobs.push(() => call(id, 'ok'));
    for (let i = 0; i < p.fail; i++) jobs.push(() => call(id, 'fail'));
    for (let i = 0; i < p.clientErrors; i++) jobs.push(() => call(id, 'missing'));
  }
  for (let i = 0; i < jobs.length; i += 16) await Promise.all(jobs.slice(i, i + 16).map((job) => job()));
  t.same(
    outcomes,
    { ok: 337, server_error: 6, network_error: 3, latency_breach: 10, client_error: 50 },
    'the gateway classified every call',
  );
  await drained(stack.gateway);

  const read = async () =>
    (await request(stack.control.urls.api!, '/api/v1/providers', { method: 'GET', headers: { 'user-agent': SDK_UA } })).body;
  const answer = await waitFor(async () => {
    const body = await read();
    const total = body.providers.reduce((n: number, p: { calls: number; client_errors: number }) => n + p.calls + p.client_errors, 0);
    return total === 406 ? body : null;
  }, 'the providers answer to include every call');

  const find = (id: string) => answer.providers.find((p: { id: string }) => p.id === publicId(stack.dataDir, id));
  t.match(find('steady'), { tier: 'RELIABLE', failure_rate: 0.004975, calls: 201, failures: 1, client_errors: 20 });
  t.match(find('wobbly'), { tier: 'ELEVATED', failure_rate: 0.03, calls: 100, failures: 3 });
  t.match(find('flaky'), { tier: 'HIGH_RISK', failure_rate: 0.25, calls: 40, failures: 10 });
  t.match(find('sparse'), { tier: 'UNRATED', failure_rate: 0.333333, calls: 15, failures: 5, client_errors: 30 });
  t.ok(find('flaky').latency_ms.p95 >= 200, `slow answers show in p95 (${find('flaky').latency_ms.p95} ms)`);
  t.notOk(JSON.stringify(answer).includes(upstream.url), 'the upstream URL is not published');
  t.notOk(/steady|wobbly|flaky|sparse/.test(JSON.stringify(answer)), 'nor the endpoint ids');

  // A gateway restart replays nothing twice: the numbers stay put.
  await stack.restartGateway(0);
  await drained(stack.gateway);
  // An answer built after the restarted gateway's journal was drained (not one still cached from before).
  const drainedAt = Date.now();
  const fresh = await waitFor(async () => {
    const body = await read();
    return Date.parse(body.updated_at) > drainedAt ? body : null;
  }, 'an answer built after the drain');
  t.match(
    fresh.providers.find((p: { id: string }) => p.id === find('steady').id),
    { calls: 201, failures: 1 },
    'unchanged after a gateway restart',
  );
});
