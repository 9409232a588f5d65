/**
 * Exactly-once outcomes across a gateway crash (docs/design.md §3.7): load runs through a gateway;
 * control is paused (SIGSTOP) so batches pile up unacked and one may be committed by control
 * without the gateway ever hearing the answer; the gateway is SIGKILLed mid-load and started
 * again with the same id and data dir. Once its journal is empty, every call whose response a
 * client received is in control's outcomes table, the rows are exactly the records the two
 * gateway processes shipped (none re-sent after control acked it, none stored without being
 * sent), and the only rows beside the answered calls are calls in flight at the kill.
 */
import t from 'tap';
import { GENEROUS_LIMITS, drained, health, metrics, request, startStack, waitFor } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { ok, startUpstream } from '../fixtures/upstream';

const TOTAL_CALLS = 400;
const CLIENTS = 16;
const PAUSE_CONTROL_AT = 100;
const KILL_GATEWAY_AT = 200;

/** Outcome records control has acked to this gateway process (`svc_gateway_outcomes_shipped_total`). */
async function shipped(gatewayUrl: string, token: string): Promise<number> {
  const text = (await metrics(gatewayUrl, token)).text;
  const match = /^svc_gateway_outcomes_shipped_total (\d+)$/m.exec(text);
  if (match === null) throw new Error(`no svc_gateway_outcomes_shipped_total in /metrics:\n${text}`);
  return Number(match[1]);
}

for (const engine of ENGINES)
  t.test(`journaled outcomes survive a SIGKILL exactly once [${engine}]`, async (t) => {
    const stack = await startStack(t, { engine, controlEnv: GENEROUS_LIMITS });
    const up = await startUpstream(t);
    up.on('/base/*', ok({ delayMs: 5 }));
    await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, sla_ms: 60_000 }));
    const controlPid = stack.control.pid;
    let controlPaused = false;
    // Runs before the processes are stopped: a stopped control would ignore SIGTERM.
    t.teardown(() => {
      if (controlPaused) process.kill(controlPid, 'SIGCONT');
    });

    const received: string[] = [];
    let issued = 0;
    let failed = 0;
    let receivedBeforeKill = -1;
    let backlogAtKill = -1;
    let shippedBeforeKill = -1;
    /** Resolves when the gateway is serving again; clients that hit the outage wait on it. */
    let back: Promise<void> = Promise.resolve();

    const crash = async () => {
      process.kill(controlPid, 'SIGSTOP');
      controlPaused = true;
      await waitFor(() => received.length >= KILL_GATEWAY_AT, `${KILL_GATEWAY_AT} answered calls`);
      backlogAtKill = (await health(stack.gateway)).body.journal_backlog;
      // Control has been stopped for a hundred calls: no ack is on its way, so this count is
      // final for the first process, and acks.json has long caught up with it.
      shippedBeforeKill = await shipped(stack.gateway, stack.metricsToken());
      receivedBeforeKill = received.length;
      await stack.killGateway(0);
      process.kill(controlPid, 'SIGCONT');
      controlPaused = false;
      await stack.restartGateway(0, { samePort: true });
    };

    let crashed: Promise<void> | undefined;
    const client = async () => {
      while (issued < TOTAL_CALLS) {
        issued++;
        try {
          const res = await request(stack.gateway, `/v1/ep/call-${issued}`, { body: '{}' });
          if (res.status !== 200) throw new Error(`status ${res.status}: ${res.text}`);
          received.push(res.headers['x-svc-call-id'] as string);
          if (received.length === PAUSE_CONTROL_AT) back = crashed = crash();
        } catch {
          failed++;
          await back;
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    await crashed;
    t.ok(receivedBeforeKill >= KILL_GATEWAY_AT, 'the gateway was killed mid-load');
    t.ok(received.length > receivedBeforeKill, 'the restarted gateway served the rest of the load');
    t.ok(backlogAtKill >= KILL_GATEWAY_AT - PAUSE_CONTROL_AT, `unacked records were in the journal at the kill (${backlogAtKill})`);
    t.comment(`${received.length} answered, ${failed} failed at the outage, backlog at kill ${backlogAtKill}`);

    await drained(stack.gateway);
    const shippedAfterRestart = await shipped(stack.gateway, stack.metricsToken());
    const rows = stack.outcomes();
    const stored = new Set(rows.map((r) => r.call_id));

    t.equal(new Set(received).size, received.length, 'clients never saw the same call id twice');
    const missing = received.filter((id) => !stored.has(id));
    t.same(missing, [], 'every answered call is in control');
    // Each record is acked once: by the first process before the kill, or by the restarted one,
    // which ships everything the first left unacked (control dedupes what it had committed
    // unheard). A record re-sent after an ack, or a row no process sent, breaks the equation.
    t.equal(
      rows.length,
      shippedBeforeKill + shippedAfterRestart,
      `no call id is stored twice: control's rows are the records the gateway shipped (${shippedBeforeKill} before the kill + ${shippedAfterRestart} after)`,
    );
    t.ok(shippedAfterRestart >= backlogAtKill, 'the restarted gateway shipped the backlog it found');
    const extra = rows.filter((r) => !received.includes(r.call_id));
    t.ok(extra.length <= CLIENTS, `the only other rows are calls in flight at the kill (${extra.length} ≤ ${CLIENTS})`);
    t.ok(extra.length <= failed, 'and each of them is a call whose client saw a failure');
    t.same(
      [...new Set(rows.map((r) => `${r.gateway_id} ${r.endpoint_id} ${r.outcome} ${r.status}`))],
      ['gw-1 ep ok 200'],
      'every row is an ok call of this gateway',
    );
    t.ok(up.requests.length >= rows.length, 'every stored outcome is a call the upstream saw');
    t.ok(up.requests.length <= rows.length + CLIENTS, 'and the upstream saw no more than the in-flight calls besides');
  });
