/**
 * A gateway run as two workers (`SVC_GATEWAY_WORKERS=2`, docs/gateway.md "Workers"): one port,
 * two gateway processes under a supervisor, each the gateway `gw-1.<n>` to control. Every call
 * is answered; `/health` and `/metrics` answer for both workers wherever the request lands; a
 * worker killed with SIGKILL is started again and ships its own journal (every outcome at control
 * once); SIGTERM stops the supervisor once every worker shipped its last outcomes (control
 * paused until the shutdown has begun, so each worker still holds records), and workers whose
 * supervisor was killed do the same by themselves.
 */
import t from 'tap';
import {
  GENEROUS_LIMITS,
  drained,
  health,
  metrics,
  request,
  sleep,
  startStack,
  svcctl,
  testdirAfterTeardowns,
  waitFor,
} from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';

interface Worker {
  index: number;
  id: string;
  pid: number | null;
  state: string;
  restarts: number;
  answered: boolean;
  journal_backlog: number | null;
  answered_calls: number | null;
}

/** True while process `pid` exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('a gateway of two workers', async (t) => {
  const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS, gatewayEnv: { SVC_GATEWAY_WORKERS: '2' } });
  const up = await startUpstream(t);
  up.on('/base/*', ok());
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, sla_ms: 60_000 }));
  const gw = stack.gateways[0]!;
  // A short timeout, retried by the waits: a connection the supervisor hands to a worker at the
  // instant it dies is never answered (Node's round-robin hand-off; docs/gateway.md, "Workers").
  const workers = async (): Promise<Worker[]> =>
    (await request(gw.url, '/health', { method: 'GET', headers: { authorization: `Bearer ${stack.metricsToken()}` }, timeoutMs: 2_000 }))
      .body.workers;
  const answered: string[] = [];
  /** `n` calls, four at a time, each on a connection of its own; every one must be answered 200. */
  const calls = async (n: number) => {
    let next = 0;
    const client = async () => {
      while (next < n) {
        next++;
        const res = await request(gw.url, '/v1/ep/x', { body: '{}' });
        t.equal(res.status, 200, 'answered');
        if (res.status === 200) answered.push(String(res.headers['x-svc-call-id']));
      }
    };
    await Promise.all([client(), client(), client(), client()]);
  };

  await t.test('every call is answered; /health and /metrics cover both workers', async (t) => {
    await calls(40);
    t.equal(answered.length, 40, 'every call answered 200');
    t.same((await health(gw.url, null)).body, { status: 'ok' }, 'the public /health answers for the whole gateway');
    const detail = (await health(gw.url)).body;
    t.match(detail, { status: 'ok', ready: true, gateway_id: 'gw-1' });
    const list: Worker[] = detail.workers;
    t.match(list, [
      { index: 1, id: 'gw-1.1', state: 'running', restarts: 0, answered: true },
      { index: 2, id: 'gw-1.2', state: 'running', restarts: 0, answered: true },
    ]);
    const pids = list.map((w) => w.pid);
    t.equal(new Set([...pids, gw.pid]).size, 3, 'two worker processes beside the supervisor');
    t.ok(
      list.every((w) => w.answered_calls! >= 1),
      `both workers answered calls (${list.map((w) => w.answered_calls).join(' + ')})`,
    );
    const text = (await metrics(gw.url, stack.metricsToken())).text;
    const requests = [...text.matchAll(/^svc_gateway_requests_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    t.equal(requests, 40, 'svc_gateway_requests_total adds up both workers');
    t.match(text, /^svc_gateway_workers 2$/m);
    t.match(text, /^svc_gateway_workers_answering 2$/m);

    const listed = await stack.cli(['gateways', 'list', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    t.match(listed.json().gateways, [
      { id: 'gw-1.1', gateway: 'gw-1', connected: true },
      { id: 'gw-1.2', gateway: 'gw-1', connected: true },
    ]);
    const table = await stack.cli(['gateways', 'list']);
    t.match(table.stdout, /^gw-1 +2 of 2 +2 of 2 /m, 'the gateway has a row of its own');
    t.match(table.stdout, /^ {2}gw-1\.1 +yes/m, 'its workers are listed under it');
    const status = await stack.cli(['status', '--json']);
    t.match(status.json().gateways, [
      { id: 'gw-1.1', gateway: 'gw-1' },
      { id: 'gw-1.2', gateway: 'gw-1' },
    ]);
  });

  await t.test('a worker killed with SIGKILL is started again and ships its journal: every outcome once', async (t) => {
    // With control away the journals fill up; the victim dies holding records control never had.
    await stack.killControl();
    await calls(30);
    const victim = (await workers()).reduce((a, b) => (b.journal_backlog! > a.journal_backlog! ? b : a));
    t.ok(victim.journal_backlog! > 0, `${victim.id} holds ${victim.journal_backlog} records control never acked`);
    process.kill(victim.pid!, 'SIGKILL');
    setTimeout(
      () =>
        console.error(
          'DEBUG',
          gw
            .stderr()
            .split('\n')
            .filter((l) => !/sync stream|unreachable|budget/.test(l))
            .slice(-25)
            .join('\n'),
        ),
      8000,
    ).unref();
    const back = await waitFor(async () => {
      const w = (await workers()).find((x) => x.index === victim.index)!;
      return w.state === 'running' && w.pid !== victim.pid && w.answered ? w : null;
    }, `${victim.id} started again`);
    t.match(back, { id: victim.id, restarts: 1 }, 'the same worker, under its id, started once more');
    await calls(10);
    await stack.restartControl(GENEROUS_LIMITS);
    await drained(gw.url);
    const rows = stack.outcomes();
    t.equal(rows.length, answered.length, `${answered.length} answered calls, as many outcomes`);
    t.same(rows.map((r) => r.call_id).sort(), [...answered].sort(), 'exactly the answered calls, none lost, none twice');
    t.same([...new Set(rows.map((r) => r.gateway_id))].sort(), ['gw-1.1', 'gw-1.2'], 'each recorded by its worker');
  });

  await t.test('SIGTERM stops every worker once it shipped its last outcomes', async (t) => {
    // Control paused: every worker holds records it has not shipped when the SIGTERM comes.
    process.kill(stack.control.pid, 'SIGSTOP');
    let paused = true;
    t.teardown(() => {
      if (paused) process.kill(stack.control.pid, 'SIGCONT');
    });
    await calls(20);
    const list = await workers();
    t.ok(
      list.every((w) => w.journal_backlog! > 0),
      `each worker holds records (${list.map((w) => `${w.id} ${w.journal_backlog}`).join(', ')})`,
    );
    const stopping = gw.stop();
    await sleep(500);
    process.kill(stack.control.pid, 'SIGCONT');
    paused = false;
    const exit = await stopping;
    t.same(exit, { code: 0, signal: null }, 'the supervisor exits 0');
    t.ok(
      list.every((w) => !alive(w.pid!)),
      'no worker outlives it',
    );
    t.same(
      stack
        .outcomes()
        .map((r) => r.call_id)
        .sort(),
      [...answered].sort(),
      'control holds every answered call',
    );
  });
});

t.test('workers whose supervisor is killed stop as a gateway stops: their last outcomes shipped', async (t) => {
  const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS, gatewayEnv: { SVC_GATEWAY_WORKERS: '2' } });
  const up = await startUpstream(t);
  up.on('/base/*', ok());
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, sla_ms: 60_000 }));
  const gw = stack.gateways[0]!;
  const pids: number[] = (await health(gw.url)).body.workers.map((w: Worker) => w.pid);
  process.kill(stack.control.pid, 'SIGSTOP');
  let paused = true;
  t.teardown(() => {
    if (paused) process.kill(stack.control.pid, 'SIGCONT');
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  const answered: string[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await request(gw.url, '/v1/ep/x', { body: '{}' });
    t.equal(res.status, 200);
    answered.push(String(res.headers['x-svc-call-id']));
  }
  await gw.kill('SIGKILL');
  await sleep(300);
  process.kill(stack.control.pid, 'SIGCONT');
  paused = false;
  await waitFor(() => pids.every((pid) => !alive(pid)), 'both workers to exit');
  t.same(
    stack
      .outcomes()
      .map((r) => r.call_id)
      .sort(),
    answered.sort(),
    'control holds every answered call',
  );
});

t.test('--workers and SVC_GATEWAY_WORKERS are checked like every setting (exit 2)', async (t) => {
  const dataDir = testdirAfterTeardowns(t);
  const serve = ['serve', 'gateway', '--data-dir', dataDir, '--gateway-port', '0'];
  const zero = await svcctl([...serve, '--workers', '0']);
  t.equal(zero.code, 2, zero.stderr);
  t.match(zero.stderr, /invalid setting gateway\.workers \(from flag --workers\): 0; allowed: an integer from 1 to 1024, or auto/);
  const word = await svcctl(serve, { SVC_GATEWAY_WORKERS: 'many' });
  t.equal(word.code, 2, word.stderr);
  t.match(word.stderr, /gateway\.workers \(from env SVC_GATEWAY_WORKERS\): "many"/);
  const long = await svcctl([...serve, '--workers', '10', '--id', 'g'.repeat(62)]);
  t.equal(long.code, 2, long.stderr);
  t.match(long.stderr, /invalid setting gateway\.id .*with gateway\.workers 10, 1 to 61 of/);
});

t.test('a worker that cannot start fails the start of the gateway (exit 1), naming the worker', async (t) => {
  // No sync token in the data dir and none configured: every worker refuses to start.
  const dataDir = testdirAfterTeardowns(t);
  const run = await svcctl(['serve', 'gateway', '--data-dir', dataDir, '--gateway-port', '0', '--id', 'gw', '--workers', '2']);
  t.equal(run.code, 1, run.stderr);
  t.match(run.stderr, /no sync token/, "the worker's own reason");
  t.match(run.stderr, /svcctl: gateway worker gw\.[12] exited \(code 1\) before it listened/);
});
