/**
 * svcctl while control cannot reach its database (503 `svc_store_unavailable`): `status` says
 * what it can — control up, the store unreachable (which, its URL's password masked) — and
 * exits 3; `--json` says the same as JSON; every other command prints the coded error and
 * exits 3 too. A stand-in control answers the problem, as control does (test/e2e/pg-outage.ts
 * does it with a stopped PostgreSQL).
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXIT_FAILURE, EXIT_STORE_UNAVAILABLE } from '../../cli/exit-codes';
import { problem, type Problem } from '../../protocol/errors';
import { runCli } from '../fixtures/cli';

/** A control that answers every request with `body` (problem+json, 503 unless it says otherwise). */
async function answering(t: Test, body: Problem): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(body.status, { 'content-type': 'application/problem+json', 'retry-after': '5' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const STORE = { kind: 'postgres', url: 'postgres://svc:***@db.internal:5432/svc', reason: 'connect ECONNREFUSED 10.0.0.5:5432' };
const UNAVAILABLE = problem(
  'svc_store_unavailable',
  `the PostgreSQL store at ${STORE.url} cannot be reached (${STORE.reason}); try again in a few seconds`,
  { store: STORE },
);

t.test('status: control up, the store unreachable, exit 3', async (t) => {
  const control = await answering(t, UNAVAILABLE);
  const run = await runCli(['status'], { control, token: 'root-token' });
  t.equal(run.code, EXIT_STORE_UNAVAILABLE);
  t.equal(run.stderr, '');
  t.same(run.stdout.split('\n').slice(0, 2), [
    `control        up at ${control}`,
    `store          unreachable: postgres ${STORE.url} (${STORE.reason})`,
  ]);
  t.match(run.stdout, 'control answers 503 svc_store_unavailable');

  const json = await runCli(['status', '--json'], { control, token: 'root-token' });
  t.equal(json.code, EXIT_STORE_UNAVAILABLE);
  t.same(json.json(), {
    status: 'store_unavailable',
    control: { url: control, reachable: true },
    store: { ...STORE, reachable: false },
    problem: UNAVAILABLE,
  });
});

t.test('a URL in the answer is printed masked, whatever control sent', async (t) => {
  const control = await answering(
    t,
    problem('svc_store_unavailable', 'unreachable', { store: { kind: 'postgres', url: 'postgres://u:hunter2@h/db' } }),
  );
  const run = await runCli(['status', '--json'], { control, token: 'root-token' });
  t.equal(run.code, EXIT_STORE_UNAVAILABLE);
  t.equal(run.json().store.url, 'postgres://u:***@h/db');
  t.notMatch(run.stdout.replace(/"problem":.*$/s, ''), 'hunter2', 'the store line never shows the password');
});

t.test('an answer that names no store still says control is up', async (t) => {
  const control = await answering(t, problem('svc_store_unavailable', 'no database'));
  const run = await runCli(['status'], { control, token: 'root-token' });
  t.equal(run.code, EXIT_STORE_UNAVAILABLE);
  t.match(run.stdout, 'store          unreachable: the store\n');
});

t.test('other commands: the coded error, exit 3', async (t) => {
  const control = await answering(t, UNAVAILABLE);
  for (const args of [
    ['keys', 'list'],
    ['keys', 'issue', '--name', 'x'],
    ['settler', 'status'],
    ['ledger', 'verify'],
  ]) {
    const run = await runCli(args, { control, token: 'root-token' });
    t.equal(run.code, EXIT_STORE_UNAVAILABLE, args.join(' '));
    t.equal(run.stderr, `svcctl: ${UNAVAILABLE.detail} (svc_store_unavailable)`);
  }
});

t.test('any other 5xx stays exit 1', async (t) => {
  const control = await answering(t, problem('svc_internal', 'internal error'));
  const run = await runCli(['status'], { control, token: 'root-token' });
  t.equal(run.code, EXIT_FAILURE);
  t.equal(run.stderr, 'svcctl: internal error (svc_internal)');
});
