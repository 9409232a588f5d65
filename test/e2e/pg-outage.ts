/**
 * Control on PostgreSQL while the database is stopped (a fast shutdown, as `pg_ctl stop -m
 * fast`), then started again: every listener names the outage instead of a 500 — 503
 * `svc_store_unavailable` with `Retry-After` on the admin API (its detail naming the store, the
 * URL's password masked), the public API and the indexer (saying only that the data is
 * temporarily unavailable), an HTML page for browsers, and the status page's last answer
 * served stale; `svcctl status` says control is up and the store is not, with exit code 3, and
 * other commands print the coded error with that code. A gateway answers calls from its
 * snapshot meanwhile, is refused its outcome batches with 503 and sends them again. Once the
 * database is back, everything answers 200 again without control being restarted, and every
 * call answered during the outage is stored; how long each takes is reported.
 */
import t from 'tap';
import { Client } from 'pg';
import { startCluster } from '../../demo/throwaway-postgres';
import { EXIT_STORE_UNAVAILABLE } from '../../cli/exit-codes';
import { generateOperatorToken } from '../../protocol/operator-token';
import { skipWithoutPostgres } from '../fixtures/postgres';
import { CHROME_UA, SDK_UA } from '../fixtures/public';
import { GENEROUS_LIMITS, drained, health, request, startStack, waitFor, type HttpResult } from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';

/** Trust authentication ignores it; here to show that no answer ever prints it. */
const PASSWORD = 's3cret-pw';
const BROWSER = { 'user-agent': CHROME_UA, accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const PROGRAM = { 'user-agent': SDK_UA, accept: 'application/json' };

t.test('PostgreSQL stopped: every listener answers 503 svc_store_unavailable, svcctl says so, and all recovers', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const cluster = await startCluster();
  t.teardown(() => cluster.stop());
  await cluster.query('CREATE DATABASE svc');
  const url = cluster.url('svc').replace('postgres@', `postgres:${PASSWORD}@`);
  const stack = await startStack(t, {
    controlEnv: {
      ...GENEROUS_LIMITS,
      SVC_DATABASE_URL: url,
      SVC_CACHE_STATUS_TTL_S: '1',
      SVC_CACHE_STATS_TTL_S: '1',
      SVC_CACHE_PROVIDERS_TTL_S: '1',
    },
  });
  const up = await startUpstream(t);
  up.on('/base/*', ok());
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, sla_ms: 60_000 }));
  const { api, indexer } = stack.control.urls as { api: string; indexer: string };
  const pid = stack.control.pid;
  const reads: [string, string, string, Record<string, string>][] = [
    ['admin status', stack.control.url, '/_admin/v1/status', { authorization: `Bearer ${stack.adminToken()}` }],
    // A token of an operator's shape that nobody holds: it cannot be checked while the database is away.
    ['admin status, unchecked token', stack.control.url, '/_admin/v1/status', { authorization: `Bearer ${generateOperatorToken()}` }],
    ['public status (JSON)', api, '/api/v1/status', PROGRAM],
    ['public providers', api, '/api/v1/providers', PROGRAM],
    ['indexer stats', indexer, '/api/stats', PROGRAM],
    ['status page (HTML)', api, '/status', BROWSER],
    ['providers page (HTML)', api, '/providers', BROWSER],
    ['indexer activity page (HTML)', indexer, '/activity', BROWSER],
  ];
  const all = () => Promise.all(reads.map(([, base, path, headers]) => request(base, path, { method: 'GET', headers })));
  t.same(
    (await all()).map((r) => r.status),
    reads.map(([name]) => (name.endsWith('unchecked token') ? 401 : 200)),
    'every read answers 200 with the database up (the status page is read once: its last answer), a token nobody holds 401',
  );

  const stopping = performance.now();
  await cluster.pause();
  // Each cached answer expires within its 1 s TTL; then each is read from the database again.
  const down = await waitFor(async () => {
    const answers = await all();
    return answers.every((r) => r.status === 503) ? answers : null;
  }, 'every read to answer 503');
  t.comment(
    `outage: every listener answered 503 ${Math.round(performance.now() - stopping)} ms after the fast shutdown began (cached answers live 1 s)`,
  );
  const byName = new Map(reads.map(([name], i) => [name, down[i]!]));
  for (const [name, res] of byName) {
    t.equal(res.headers['retry-after'], '5', `${name}: Retry-After`);
    t.notMatch(res.text, PASSWORD, `${name}: no password`);
  }
  const problem = (name: string): HttpResult => {
    const res = byName.get(name)!;
    t.match(res.headers['content-type'], /^application\/problem\+json/, `${name}: problem+json`);
    t.equal(res.body.code, 'svc_store_unavailable', `${name}: the code`);
    return res;
  };
  const admin = problem('admin status');
  t.match(admin.body.detail, `the PostgreSQL store at postgres://postgres:***@127.0.0.1:${cluster.port}/svc cannot be reached`);
  t.same(admin.body.store.kind, 'postgres', 'the store, as an extension member');
  t.match(admin.body.store.url, /:\*\*\*@/);
  for (const name of ['admin status, unchecked token', 'public status (JSON)', 'public providers', 'indexer stats']) {
    const res = problem(name);
    t.match(res.body.detail, /temporarily unavailable/, `${name}: the public detail`);
    t.notOk('store' in res.body, `${name}: no store member`);
    t.notMatch(res.text, '127.0.0.1', `${name}: nothing of where the database is`);
  }
  const statusPage = byName.get('status page (HTML)')!;
  t.match(statusPage.headers['content-type'], /^text\/html/);
  t.match(statusPage.text, /id="stale"[^>]*>Stale since .*temporarily unavailable/, 'the stale note');
  t.match(statusPage.text, 'id="overall"', 'the last status read, under it');
  t.ok(Date.parse(String(statusPage.headers['x-svc-stale-since'])) > 0, 'the stale header names when it was read');
  for (const name of ['providers page (HTML)', 'indexer activity page (HTML)']) {
    const res = byName.get(name)!;
    t.match(res.headers['content-type'], /^text\/html/, `${name}: a page`);
    t.match(res.text, /The data is temporarily unavailable/, `${name}: says so`);
    t.match(res.text, '<code id="error-code">svc_store_unavailable</code>', `${name}: the code`);
  }

  // The gateway answers from its snapshot and keeps the outcomes; control refuses them with 503 meanwhile.
  const calls: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await request(stack.gateway, `/v1/ep/during-${i}`, { body: '{}' });
    t.equal(res.status, 200, 'a call during the outage is answered');
    calls.push(res.headers['x-svc-call-id'] as string);
  }
  await waitFor(async () => (await health(stack.gateway)).body?.journal_backlog > 0, 'the outcomes to wait in the journal');
  await waitFor(
    () => /outcome batch not shipped; will retry.*control answered 503: .*svc_store_unavailable/.test(stack.gateways[0]!.stderr()),
    'the gateway to be refused with 503 and to say it will retry',
  );

  const status = await stack.cli(['status']);
  t.equal(status.code, EXIT_STORE_UNAVAILABLE, 'svcctl status exits 3');
  t.match(status.stdout, `control        up at ${stack.control.url}`);
  t.match(status.stdout, `store          unreachable: postgres postgres://postgres:***@127.0.0.1:${cluster.port}/svc`);
  const json = await stack.cli(['status', '--json']);
  t.equal(json.code, EXIT_STORE_UNAVAILABLE);
  t.match(json.json(), { status: 'store_unavailable', control: { reachable: true }, store: { kind: 'postgres', reachable: false } });
  for (const args of [
    ['keys', 'issue', '--name', 'during'],
    ['settler', 'status'],
    ['ledger', 'verify'],
  ]) {
    const run = await stack.cli(args);
    t.equal(run.code, EXIT_STORE_UNAVAILABLE, `svcctl ${args.join(' ')} exits 3`);
    t.match(
      run.stderr,
      /^svcctl: the PostgreSQL store at postgres:\/\/postgres:\*\*\*@.* cannot be reached .*\(svc_store_unavailable\)\n$/,
    );
    t.notMatch(run.stderr + run.stdout, PASSWORD);
  }

  const back = performance.now();
  await cluster.resume();
  const resumedMs = Math.round(performance.now() - back);
  await waitFor(
    async () => (await all()).every((r, i) => r.status === (reads[i]![0].endsWith('unchecked token') ? 401 : 200)),
    'every read to answer as before the outage',
    10_000,
  );
  const recoveredMs = Math.round(performance.now() - back) - resumedMs;
  t.comment(`recovery: every listener answered 200 ${recoveredMs} ms after PostgreSQL accepted connections again (target: within 10 s)`);
  t.ok(recoveredMs < 10_000, 'recovered within 10 s');
  await drained(stack.gateway);
  t.comment(
    `the gateway's journal drained ${Math.round(performance.now() - back) - resumedMs} ms after PostgreSQL accepted connections again (its retries back off up to 10 s)`,
  );
  const db = new Client({ connectionString: url });
  await db.connect();
  t.teardown(() => db.end());
  const stored = (await db.query<{ call_id: string }>('SELECT call_id FROM outcomes WHERE call_id = ANY($1)', [calls])).rows;
  t.equal(stored.length, calls.length, "every call answered during the outage is stored, once: control's 503s were retried");
  t.equal(stack.control.pid, pid, 'the same control process');
  t.ok(stack.control.running(), 'control kept running');
  t.equal((await stack.cli(['status'])).code, 0, 'svcctl status exits 0 again');
  t.equal((await stack.cli(['keys', 'issue', '--name', 'after'])).code, 0, 'a change commits again');
});
