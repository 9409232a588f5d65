/**
 * `svcctl stats`: finds the indexer through control's admin status (`urls.indexer`) and
 * prints its `/api/stats`, as JSON with `--json` or as text; the admin token never goes to
 * the indexer; an unreachable indexer is exit code 1 with one line on stderr.
 */
import t from 'tap';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl } from '../fixtures/control';
import { addEndpoint, ingest, many, outcome } from '../fixtures/public';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

t.test('prints the indexer’s stats', async (t) => {
  const clock = manualClock(NOW);
  const control = await startTestControl(t, { now: clock.now, env: { SVC_SETTLER_CADENCE_MS: '3600000' } });
  await addEndpoint(control, 'weather');
  await ingest(
    control,
    many(3, (i) => outcome({ endpoint_id: 'weather', at: NOW - i * 1000, latency_ms: 12 + i })),
  );

  const json = await runCli(['stats', '--json'], { control });
  t.equal(json.code, 0, json.stderr);
  const direct = await (await fetch(`${control.urls.indexer}/api/stats`)).json();
  t.same(json.json(), direct, '--json prints /api/stats as the indexer answers it');
  t.match(json.json(), { pool_size: 0, settled_batches: 0, total_refunds: 0, total_premiums: 0, total_calls: 3 });

  const text = await runCli(['stats'], { control });
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, `indexer          ${control.urls.indexer}`);
  t.match(text.stdout, /pool size        0\n/);
  t.match(text.stdout, /settled batches  0 \(0 calls\)/);
  t.match(text.stdout, /total calls      3 \(3 not settled yet\)/);
  t.match(text.stdout, /settler          idle/);
  t.match(text.stdout, /recent activity  none settled yet/, 'recent activity lists settled calls only');

  const run = await control.admin('POST', '/_admin/v1/settler/run-once', {});
  t.equal(run.body.calls, 3);
  clock.advance(10_000);
  const settled = await runCli(['stats'], { control });
  t.equal(settled.code, 0, settled.stderr);
  t.match(settled.stdout, /recent activity \(settled calls\):\nAT\s+PROVIDER\s+OUTCOME/);
  t.match(
    settled.stdout,
    new RegExp(`prv_\\w{12}\\s+ok\\s+200\\s+12\\s+0\\s+0\\s+${run.body.batches[0].id}\\s+call_\\w{16}`),
    'one row per settled call, with its money and batch',
  );
  t.notOk(settled.stdout.includes('weather'), 'opaque ids only');
});

t.test('never sends the admin token to the indexer; reports an unreachable indexer', async (t) => {
  const control = await startTestControl(t);
  const seen: IncomingHttpHeaders[] = [];
  const fake = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        pool_size: 1,
        settled_batches: 0,
        total_refunds: 0,
        total_premiums: 0,
        total_calls: 0,
        recent_activity: [],
        updated_at: 'x',
      }),
    );
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => fake.close(() => r())));
  const ctx = control.handle.ctx;
  ctx.urls.indexer = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;

  const ok = await runCli(['stats', '--json'], { control });
  t.equal(ok.code, 0, ok.stderr);
  t.equal(ok.json().pool_size, 1);
  t.equal(seen.length, 1);
  t.notOk(seen[0]!.authorization, 'no Authorization header to the indexer');

  await new Promise<void>((r) => fake.close(() => r()));
  const down = await runCli(['stats'], { control });
  t.equal(down.code, 1, 'exit code 1');
  t.match(down.stderr, /^svcctl: indexer not reachable at http:\/\/127\.0\.0\.1:\d+\/api\/stats \(connection failed\)$/);
});
