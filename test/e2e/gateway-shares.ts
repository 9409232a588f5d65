/**
 * Limits that hold across gateways (`limits.mode` = `split`, the default), with control and
 * three real gateway processes: a key limited to 30/min, called round-robin through the three,
 * is admitted at most its limit plus the documented burst in total (each gateway enforces a
 * third); a gateway that stops renewing its lease (SIGSTOP) and one that stops (SIGTERM) hand
 * their part to the others within `sync.leaseS` plus one push.
 *
 * Control's defaults here: 60/min with a burst of 6, so a key limited to 30/min has a burst
 * of 3 (the burst scales with the key's count) and each of three gateways a bucket of 1 that
 * refills at 10/min.
 */
import t from 'tap';
import { health, request, sleep, startStack, waitFor, type Stack } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

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
    const auth = { authorization: `Bearer ${key.key}` };
    const admitted = [0, 0, 0];
    let refused = 0;
    const started = Date.now();
    for (let i = 0; Date.now() - started < HAMMER_MS; i++) {
      const res = await request(stack.gateways[i % 3]!.url, '/v1/ep/x', { body: '{}', headers: auth });
      if (res.status === 200) admitted[i % 3]!++;
      else if (res.status === 429) refused++;
      else t.fail(`unexpected status ${res.status}: ${res.text}`);
      if (i === 0)
        t.equal(res.headers['ratelimit-policy'], '"key";q=10;w=60;svc-burst=1', 'each gateway enforces a third: 10/min, a burst of 1');
      await sleep(PACE_MS); // pacing the load generator (PACE_MS), not waiting for anything
    }
    const elapsedS = (Date.now() - started) / 1000;
    const total = admitted.reduce((a, b) => a + b, 0);
    t.comment(`admitted ${total} (${admitted.join(' + ')}), refused ${refused}, in ${elapsedS.toFixed(1)} s`);
    t.ok(total <= LIMIT_PER_MIN + KEY_BURST, `at most ${LIMIT_PER_MIN} + ${KEY_BURST} admitted (${total})`);
    // The sharper bound for the time it ran: the burst, plus the limit's rate for that long.
    const bound = Math.floor(KEY_BURST + (LIMIT_PER_MIN * elapsedS) / 60);
    t.ok(total <= bound, `at most burst + rate × time = ${bound} admitted in ${elapsedS.toFixed(1)} s (${total})`);
    t.ok(
      admitted.every((n) => n >= 1),
      'every gateway admitted its part',
    );
    t.ok(refused > 0, 'the rest were refused');
    t.equal(up.requests.length, total, 'the upstream saw only the admitted calls');
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
