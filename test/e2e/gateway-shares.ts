/**
 * Limits that hold across gateways (`limits.mode` = `split`, the default), with control and
 * three real gateway processes: a key limited to 30/min, called round-robin through the three,
 * is admitted at most its limit plus the documented burst in total (each gateway enforces a
 * third); a gateway that stops renewing its lease (SIGSTOP) and one that stops (SIGTERM) hand
 * their part to the others within `sync.leaseS` plus one push. The same hammer runs against one
 * gateway of two workers (`--workers 2`): each worker is a gateway to control and enforces half.
 *
 * Control's defaults here: 60/min with a burst of 6, so a key limited to 30/min has a burst
 * of 3 (the burst scales with the key's count) and each of three gateways a bucket of 1 that
 * refills at 10/min.
 */
import t from 'tap';
import type { Test } from 'tap';
import { drained, health, request, sleep, startStack, waitFor, type Stack } from '../fixtures/stack';
import { startUpstream, type TestUpstream } from '../fixtures/upstream';

const LEASE_S = 2;
const LIMIT_PER_MIN = 30;
/** The key's burst: round(30 × 6 / 60). */
const KEY_BURST = 3;
/** How long the key is hammered. */
const HAMMER_MS = 8_000;
/** Pause between calls, so the hammer does not take the machine's two cores from everyone else. */
const PACE_MS = 5;
/** Bound on waiting for a re-division: the lease, one push, and room for a loaded machine. */
const REDIVIDE_LIMIT_MS = LEASE_S * 1000 + 8_000;

async function shareOf(url: string): Promise<{ share: number; gateways: number } | null> {
  return (await health(url)).body?.limit_share ?? null;
}

async function allShare(stack: Stack, indexes: number[], share: number, gateways: number): Promise<void> {
  await Promise.all(
    indexes.map((i) =>
      waitFor(
        async () => {
          const s = await shareOf(stack.gateways[i]!.url);
          return s !== null && Math.abs(s.share - share) < 1e-6 && s.gateways === gateways;
        },
        `gw-${i + 1} to enforce a share of ${share} among ${gateways}`,
        REDIVIDE_LIMIT_MS,
      ),
    ),
  );
}

/**
 * Call the key for {@link HAMMER_MS} through `targets` in turn (URLs; one gateway's URL for a
 * gateway of workers): at most the limit plus the burst is admitted in total, each of the
 * gateways that share the limit (`parts`, by the outcomes' gateway ids) admitted its part, and
 * every call enforced `policy` (its share of the key's limit).
 */
async function hammer(t: Test, stack: Stack, up: TestUpstream, key: string, targets: string[], parts: string[], policy: string) {
  const auth = { authorization: `Bearer ${key}` };
  const before = new Set(stack.outcomes().map((r) => r.call_id));
  let admitted = 0;
  let refused = 0;
  const started = Date.now();
  for (let i = 0; Date.now() - started < HAMMER_MS; i++) {
    const res = await request(targets[i % targets.length]!, '/v1/ep/x', { body: '{}', headers: auth });
    if (res.status === 200) admitted++;
    else if (res.status === 429) refused++;
    else t.fail(`unexpected status ${res.status}: ${res.text}`);
    if (i === 0) t.equal(res.headers['ratelimit-policy'], policy, `each of ${parts.length} enforces its share: ${policy}`);
    await sleep(PACE_MS); // pacing the load generator (PACE_MS), not waiting for anything
  }
  const elapsedS = (Date.now() - started) / 1000;
  for (const url of new Set(targets)) await drained(url);
  const byGateway = new Map(parts.map((id) => [id, 0]));
  for (const row of stack.outcomes()) if (!before.has(row.call_id)) byGateway.set(row.gateway_id, (byGateway.get(row.gateway_id) ?? 0) + 1);
  t.comment(
    `admitted ${admitted} (${[...byGateway].map(([id, n]) => `${id} ${n}`).join(', ')}), refused ${refused}, in ${elapsedS.toFixed(1)} s`,
  );
  t.ok(admitted <= LIMIT_PER_MIN + KEY_BURST, `at most ${LIMIT_PER_MIN} + ${KEY_BURST} admitted (${admitted})`);
  // The sharper bound for the time it ran: the burst, plus the limit's rate for that long.
  const bound = Math.floor(KEY_BURST + (LIMIT_PER_MIN * elapsedS) / 60);
  t.ok(admitted <= bound, `at most burst + rate × time = ${bound} admitted in ${elapsedS.toFixed(1)} s (${admitted})`);
  t.same([...byGateway.keys()].sort(), [...parts].sort(), 'only the gateways sharing the limit recorded calls');
  t.ok(
    [...byGateway.values()].every((n) => n >= 1),
    'every gateway admitted its part',
  );
  t.equal(
    [...byGateway.values()].reduce((a, b) => a + b, 0),
    admitted,
    'every admitted call is one outcome',
  );
  t.ok(refused > 0, 'the rest were refused');
  t.equal(up.requests.length, admitted, 'the upstream saw only the admitted calls');
}

t.test('a key limit holds across three gateways, and a departed gateway’s part goes to the others', async (t) => {
  const stack = await startStack(t, {
    gateways: 3,
    controlEnv: { SVC_SYNC_LEASE_S: String(LEASE_S), SVC_LIMITS_KEY_COUNT: '60', SVC_LIMITS_KEY_BURST: '6' },
  });
  const stopped = stack.gateways[2]!.child;
  // Teardowns run last-registered first: wake a stopped gateway before the stack stops it.
  t.teardown(() => void stopped.kill('SIGCONT'));
  const up = await startUpstream(t);
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base` }));
  const key = await stack.issueKey({ limit: { count: LIMIT_PER_MIN, window_seconds: 60 } });
  await stack.applied(key.version);
  await allShare(stack, [0, 1, 2], 0.333333333, 3);

  const listed = await stack.cli(['gateways', 'list', '--json']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(JSON.parse(listed.stdout), {
    limits_mode: 'split',
    lease_s: LEASE_S,
    gateways: [
      { id: 'gw-1', connected: true, live: true, share: 0.333333333 },
      { id: 'gw-2', connected: true, live: true, share: 0.333333333 },
      { id: 'gw-3', connected: true, live: true, share: 0.333333333 },
    ],
  });

  await t.test('round-robin through three gateways: at most the limit plus the burst in total', async (t) => {
    const urls = stack.gateways.map((g) => g.url);
    await hammer(t, stack, up, key.key, urls, ['gw-1', 'gw-2', 'gw-3'], '"key";q=10;w=60;svc-burst=1');
  });

  await t.test('a gateway whose lease lapses (SIGSTOP): the other two share the limit', async (t) => {
    stopped.kill('SIGSTOP');
    await allShare(stack, [0, 1], 0.5, 2);
    const view = (await stack.admin('GET', '/_admin/v1/gateways')).body;
    t.match(
      view.gateways.find((g: { id: string }) => g.id === 'gw-3'),
      { live: false, share: 0 },
      'the silent gateway is no longer live, and is shown no share once its lease lapsed',
    );
    const res = await request(stack.gateways[0]!.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${key.key}` } });
    t.equal(res.headers['ratelimit-policy'], '"key";q=15;w=60;svc-burst=1', 'gw-1 now enforces half: 15/min');

    stopped.kill('SIGCONT');
    await allShare(stack, [0, 1, 2], 0.333333333, 3);
    t.pass('once it answers again it is counted again');
  });

  await t.test('a gateway that stops: the other two share the limit', async (t) => {
    await stack.gateways[2]!.stop();
    await allShare(stack, [0, 1], 0.5, 2);
    const view = (await stack.admin('GET', '/_admin/v1/gateways')).body;
    t.match(
      view.gateways.find((g: { id: string }) => g.id === 'gw-3'),
      { connected: false, live: false },
    );
  });
});

t.test('a key limit holds across the two workers of one gateway (--workers 2)', async (t) => {
  const stack = await startStack(t, {
    controlEnv: { SVC_SYNC_LEASE_S: String(LEASE_S), SVC_LIMITS_KEY_COUNT: '60', SVC_LIMITS_KEY_BURST: '6' },
    gatewayEnv: { SVC_GATEWAY_WORKERS: '2' },
  });
  const up = await startUpstream(t);
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base` }));
  const key = await stack.issueKey({ limit: { count: LIMIT_PER_MIN, window_seconds: 60 } });
  await stack.applied(key.version);
  await waitFor(
    async () => {
      const workers: { limit_share: number | null }[] = (await health(stack.gateway)).body?.workers ?? [];
      return workers.length === 2 && workers.every((w) => w.limit_share !== null && Math.abs(w.limit_share - 0.5) < 1e-6);
    },
    'both workers to enforce a share of 0.5',
    REDIVIDE_LIMIT_MS,
  );
  const listed = await stack.cli(['gateways', 'list', '--json']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(JSON.parse(listed.stdout).gateways, [
    { id: 'gw-1.1', gateway: 'gw-1', live: true, share: 0.5 },
    { id: 'gw-1.2', gateway: 'gw-1', live: true, share: 0.5 },
  ]);
  await hammer(t, stack, up, key.key, [stack.gateway], ['gw-1.1', 'gw-1.2'], '"key";q=15;w=60;svc-burst=1');
});
