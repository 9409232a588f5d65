/**
 * Control on PostgreSQL across a restart of the database (a fast shutdown closes every
 * connection, then the same cluster comes back on the same port), under load: the gateway
 * serves every call from its snapshot while PostgreSQL is away and keeps the outcomes in its
 * journal; control stays up, reconnects, and stores every answered call exactly once; admin
 * changes reach the gateway again afterwards. The server's log, kept in a file
 * (`ClusterOptions.logFile`), holds both of its runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Client } from 'pg';
import { startCluster } from '../../demo/throwaway-postgres';
import { skipWithoutPostgres } from '../fixtures/postgres';
import { GENEROUS_LIMITS, drained, health, request, startStack, waitFor } from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';

const TOTAL_CALLS = 300;
const CLIENTS = 8;
const RESTART_AT = 100;

t.test('PostgreSQL restarted under load: nothing acked is lost, control and the gateway carry on', async (t) => {
  if (skipWithoutPostgres(t)) return;
  // Not in t.testdir(): the stack makes that afresh.
  const logDir = mkdtempSync(join(tmpdir(), 'svc-pg-log-'));
  t.teardown(() => rmSync(logDir, { recursive: true, force: true }));
  const logFile = join(logDir, 'postgres.log');
  const cluster = await startCluster({ logFile });
  t.teardown(() => cluster.stop());
  await cluster.query('CREATE DATABASE svc');
  const url = cluster.url('svc');
  const stack = await startStack(t, { controlEnv: { ...GENEROUS_LIMITS, SVC_DATABASE_URL: url } });
  const up = await startUpstream(t);
  up.on('/base/*', ok({ delayMs: 2 }));
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base`, sla_ms: 60_000 }));

  const received: string[] = [];
  const failures: string[] = [];
  let issued = 0;
  let restarted: Promise<void> | undefined;
  let restarting = false;
  let answeredDuringRestart = 0;
  let pidBefore = 0;
  // Calls go on until TOTAL_CALLS are made and the restart is over.
  const client = async () => {
    while (issued < TOTAL_CALLS || restarted === undefined || restarting) {
      issued++;
      const res = await request(stack.gateway, `/v1/ep/call-${issued}`, { body: '{}' });
      if (res.status === 200) received.push(res.headers['x-svc-call-id'] as string);
      else failures.push(`${res.status} ${res.text}`);
      if (restarting) answeredDuringRestart++;
      if (received.length >= RESTART_AT && restarted === undefined) {
        pidBefore = cluster.pid;
        restarting = true;
        restarted = cluster.restart().finally(() => (restarting = false));
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  await restarted;
  t.not(cluster.pid, pidBefore, 'PostgreSQL was restarted mid-load (a new postmaster)');
  t.ok(answeredDuringRestart > 0, `calls were answered while PostgreSQL was away (${answeredDuringRestart})`);
  t.same(failures, [], 'the gateway answered every call, PostgreSQL away or not');
  t.equal(received.length, issued);

  await drained(stack.gateway);
  t.ok(stack.control.running(), 'control is still running');
  const db = new Client({ connectionString: url });
  await db.connect();
  t.teardown(() => db.end());
  const rows = (await db.query<{ call_id: string }>(`SELECT call_id FROM outcomes`)).rows.map((r) => r.call_id);
  const stored = new Set(rows);
  t.same(
    received.filter((id) => !stored.has(id)),
    [],
    'every answered call is stored',
  );
  t.equal(rows.length, received.length, 'once each, and nothing else');

  // Control's store works again: an admin change commits and reaches the gateway.
  const key = await stack.issueKey({ name: 'after the restart' });
  await stack.applied(key.version);
  const status = await stack.admin('GET', '/_admin/v1/status');
  t.equal(status.status, 200);
  t.equal(status.body.store.kind, 'postgres');
  t.ok((await health(stack.gateway)).body.snapshot_version >= key.version, 'the gateway applied the change made after the restart');
  await waitFor(async () => (await stack.admin('GET', '/_admin/v1/settler')).status === 200, 'the settler answers');

  await t.rejects(cluster.query('SELECT 1 / 0'), /division by zero/);
  const log = await waitFor(() => {
    const text = readFileSync(logFile, 'utf8');
    return text.includes('division by zero') ? text : null;
  }, "the server's log reaches its file");
  t.equal(log.match(/database system is ready to accept connections/g)?.length, 2, 'the log holds the first run and the restarted one');
  t.match(log, /received fast shutdown request/);
});
