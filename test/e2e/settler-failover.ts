/**
 * The settler's leader killed (SIGKILL: it gives nothing up) while batches are being settled
 * and calls flow, with real processes: two controls on one PostgreSQL database, settling on a
 * short cadence with a small batch cap and a short lease; two gateways listing both controls
 * in opposite orders (one attached to each); an upstream that fails a third of the calls, so
 * refunds are paid from a funded pool; clients calling through both gateways without pause.
 * The other control takes the lease over and settles on, the gateway attached to the killed
 * control moves to it, no call fails; once the load stops and everything is shipped and
 * settled: every call a client saw answered is stored and settled exactly once (in one batch,
 * counted once by the pool and by one receipt), `svcctl ledger verify` and `svcctl receipts
 * verify` pass, and the chain is batches 1..n, each with one receipt whose `prev` is the hash
 * of the receipt before: no gap, no fork. The takeover's timings are reported, not asserted.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE } from '../../control/bootstrap';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { GENESIS_PREV, receiptHash, type ReceiptFields } from '../../protocol/receipts-verify';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import {
  GENEROUS_LIMITS,
  health,
  type HttpResult,
  request,
  type ServiceProcess,
  sleep,
  spawnService,
  startControlProcess,
  svcctl,
  testdirAfterTeardowns,
  waitFor,
} from '../fixtures/stack';
import { rawQuery } from '../fixtures/store-sql';
import { ok, startUpstream } from '../fixtures/upstream';

const CLIENTS = 6;
const LEASE_S = 2;
const CADENCE_MS = 100;
/** Batches settled before the kill. */
const BATCHES_BEFORE_KILL = 5;
/** Answered calls after the takeover before the load stops. */
const CALLS_AFTER_TAKEOVER = 60;
const PRICE = 2000;
const PREMIUM = 150;
/** Far more than the refunds the load can owe: no refund is clamped. */
const FUNDED = 1_000_000_000;
/** Generous: the takeover is bounded by the lease and one cadence; timing belongs to the benches. */
const TAKEOVER_LIMIT_MS = 60_000;

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();

if (!skipWithoutPostgres(t)) {
  t.test('the settler leader killed mid-settlement: the other control settles on, every call exactly once', async (t) => {
    const root = testdirAfterTeardowns(t);
    const databaseUrl = await createDatabase(t);
    const env = {
      ...GENEROUS_LIMITS,
      SVC_DATABASE_URL: databaseUrl,
      SVC_SETTLER_CADENCE_MS: String(CADENCE_MS),
      SVC_SETTLER_BATCH_CAP: '4',
      SVC_SETTLER_LEASE_S: String(LEASE_S),
    };
    const dirA = join(root, 'control-a');
    const dirB = join(root, 'control-b');
    const a = await startControlProcess(t, { dataDir: dirA, env });
    const b = await startControlProcess(t, { dataDir: dirB, env });
    const adminToken = read(dirA, ADMIN_TOKEN_FILE);
    const ids = new Map<ServiceProcess, string>([
      [a, read(dirA, 'control-id')],
      [b, read(dirB, 'control-id')],
    ]);
    const admin = (control: ServiceProcess, method: string, path: string, body?: unknown): Promise<HttpResult> =>
      request(control.url, path, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    const settler = async (control: ServiceProcess) => {
      const res = await admin(control, 'GET', '/_admin/v1/settler');
      if (res.status !== 200) throw new Error(`settler status answered ${res.status}: ${res.text}`);
      return res.body as {
        state: string;
        leader: { id: string } | null;
        backlog: number;
        last_batch: { id: number } | null;
        halted: unknown;
      };
    };

    const metricsToken = read(dirA, METRICS_TOKEN_FILE);
    const up = await startUpstream(t);
    up.on('/base/*', ok({ delayMs: 2 }));
    up.on('/base/fail*', ok({ status: 500, body: { error: 'boom' } }));
    for (const id of ['alpha', 'beta']) {
      const added = await admin(a, 'POST', '/_admin/v1/endpoints', {
        id,
        upstream: `${up.url}/base`,
        price: PRICE,
        premium: PREMIUM,
        sla_ms: 60_000,
      });
      t.equal(added.status, 201, added.text);
    }
    const keys: string[] = [];
    for (let i = 0; i < 2; i++) {
      const issued = await admin(b, 'POST', '/_admin/v1/keys', { name: `caller ${i}` });
      t.equal(issued.status, 201, issued.text);
      keys.push(issued.body.key as string);
    }
    const funded = await admin(b, 'POST', '/_admin/v1/pool/fund', { amount: FUNDED });
    t.equal(funded.status, 201, funded.text);

    // Two gateways listing both controls in opposite orders: one is attached to the leader
    // (and must move), the other keeps shipping to the survivor through the kill.
    const gateways = await Promise.all(
      (
        [
          ['gw-1', [a, b]],
          ['gw-2', [b, a]],
        ] as const
      ).map(([id, controls]) => {
        const args = ['--data-dir', join(root, id), '--host', '127.0.0.1', '--gateway-port', '0', '--id', id];
        for (const control of controls) args.push('--control', control.url);
        return spawnService(t, 'gateway', args, { SVC_SYNC_TOKEN: read(dirA, SYNC_TOKEN_FILE), SVC_METRICS_TOKEN: metricsToken });
      }),
    );
    const version = (await admin(a, 'GET', '/_admin/v1/status')).body.version as number;
    const gatewayHealth = async (gw: ServiceProcess) => (await health(gw.url, metricsToken)).body;
    for (const gw of gateways)
      await waitFor(async () => (await gatewayHealth(gw))?.snapshot_version >= version, `${gw.url} to apply the setup`);
    t.same(
      await Promise.all(gateways.map(async (gw) => (await gatewayHealth(gw)).control_url)),
      [a.url, b.url],
      'each gateway is attached to the first control it lists',
    );

    // The load: clients calling both endpoints with both keys, one call in three failing.
    const answered: string[] = [];
    const outcomes = new Map<number, number>();
    const errors: string[] = [];
    let stop = false;
    let issued = 0;
    const client = async (c: number) => {
      while (!stop) {
        const i = issued++;
        const path = `/v1/${i % 2 === 0 ? 'alpha' : 'beta'}/${i % 3 === 0 ? 'fail' : 'ok'}-${i}`;
        try {
          const res = await request(gateways[c % gateways.length]!.url, path, {
            body: '{}',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[Math.floor(c / 2) % keys.length]}` },
          });
          const callId = res.headers['x-svc-call-id'];
          if (typeof callId !== 'string') throw new Error(`${path}: ${res.status} without a call id: ${res.text}`);
          answered.push(callId);
          outcomes.set(res.status, (outcomes.get(res.status) ?? 0) + 1);
        } catch (err) {
          errors.push(String(err));
          await sleep(50); // pacing the load: a failing client backs off instead of spinning
        }
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    t.teardown(() => {
      stop = true;
      return load;
    });

    const holder = await waitFor(async () => {
      const s = await settler(b);
      return (s.last_batch?.id ?? 0) >= BATCHES_BEFORE_KILL ? s.leader?.id : null;
    }, `${BATCHES_BEFORE_KILL} batches settled with calls flowing`);
    const leader = holder === ids.get(a) ? a : b;
    const survivor = leader === a ? b : a;
    t.equal(holder, ids.get(leader), 'one of the two controls holds the lease');
    t.comment(`leader: ${leader === a ? 'A' : 'B'}`);

    // Kill it while it settles: its group of batches is rolled back, and settled again by the survivor.
    await waitFor(async () => (await settler(leader)).state === 'running', 'the leader to be settling');
    const answeredAtKill = answered.length;
    await leader.kill('SIGKILL');
    const killedAt = Date.now();
    const batchAtKill = (await settler(survivor)).last_batch?.id ?? 0;

    const since = async (what: Promise<unknown>) => {
      await what;
      return Date.now() - killedAt;
    };
    const [leaseMs, runningMs, batchMs, moveMs] = await Promise.all([
      since(
        waitFor(
          async () => (await settler(survivor)).leader?.id === ids.get(survivor),
          'the survivor to take the lease over',
          TAKEOVER_LIMIT_MS,
        ),
      ),
      since(
        waitFor(
          async () => {
            const s = await settler(survivor);
            return s.state === 'running' || (s.last_batch?.id ?? 0) > batchAtKill;
          },
          'the survivor to settle',
          TAKEOVER_LIMIT_MS,
        ),
      ),
      since(
        waitFor(
          async () => ((await settler(survivor)).last_batch?.id ?? 0) > batchAtKill,
          'the survivor to settle a batch',
          TAKEOVER_LIMIT_MS,
        ),
      ),
      since(
        waitFor(
          async () => (await gatewayHealth(gateways[leader === a ? 0 : 1]!)).control_url === survivor.url,
          'the gateway attached to the killed control to move to the survivor',
        ),
      ),
    ]);
    t.pass('the survivor took the lease over and settles; the gateway attached to the killed control moved to it');
    t.comment(
      `after the kill: lease taken in ${leaseMs} ms, settling in ${runningMs} ms, first batches committed in ${batchMs} ms, gateway moved in ${moveMs} ms (lease ${LEASE_S} s, cadence ${CADENCE_MS} ms)`,
    );

    const answeredAtTakeover = answered.length;
    await waitFor(() => answered.length >= answeredAtTakeover + CALLS_AFTER_TAKEOVER, 'calls to keep flowing after the takeover');
    stop = true;
    await load;
    t.ok(
      answeredAtKill > 0 && answered.length > answeredAtKill,
      `calls flowed before and after the kill (${answeredAtKill}, ${answered.length})`,
    );
    t.comment(`${answered.length} calls answered (${JSON.stringify(Object.fromEntries(outcomes))}), ${errors.length} failed`);
    t.same(errors, [], 'no call failed: the gateway serves on while a control dies');
    t.ok((outcomes.get(500) ?? 0) > 0 && (outcomes.get(200) ?? 0) > 0, 'some calls failed upstream, some did not');

    for (const gw of gateways)
      await waitFor(async () => (await gatewayHealth(gw)).journal_backlog === 0, `${gw.url} to ship every outcome`);
    await waitFor(async () => (await settler(survivor)).backlog === 0, 'everything settled', TAKEOVER_LIMIT_MS);
    const after = await settler(survivor);
    t.equal(after.halted, null, 'the survivor is not halted');

    const at = { kind: 'postgres' as const, dataDir: survivor === a ? dirA : dirB, url: databaseUrl };
    const rows = await rawQuery(at, 'SELECT call_id, settled_batch, refund, premium FROM outcomes');
    const stored = new Map(rows.map((r) => [String(r[0]), r]));
    t.equal(new Set(answered).size, answered.length, 'no call id answered twice');
    t.same(
      answered.filter((id) => !stored.has(id)),
      [],
      'every answered call is stored',
    );
    // The gateway lives through the kill: every call it served was answered, none in flight is lost.
    t.equal(rows.length, answered.length, 'and nothing else is');
    t.same(
      rows.filter((r) => r[1] === null).map((r) => r[0]),
      [],
      'every stored call is settled',
    );
    t.equal(rows.filter((r) => Number(r[2]) > 0).length, outcomes.get(500), 'each failed call is refunded');
    t.equal(rows.filter((r) => Number(r[3]) > 0).length, outcomes.get(200), 'each ok call pays its premium');

    // Refunds and premiums are paid per batch: the pool moved exactly what the answered calls owe.
    const refunds = (outcomes.get(500) ?? 0) * (PRICE + PREMIUM);
    const premiums = (outcomes.get(200) ?? 0) * PREMIUM;
    const pool = await rawQuery(at, `SELECT balance FROM account_balances WHERE account = 'pool'`);
    t.equal(Number(pool[0]![0]), FUNDED + premiums - refunds, 'the pool paid each refund and took each premium once');

    const batches = await rawQuery(
      at,
      `SELECT b.id, b.calls, (SELECT count(*) FROM outcomes o WHERE o.settled_batch = b.id) FROM settlement_batches b ORDER BY b.id`,
    );
    const n = batches.length;
    t.ok(n > batchAtKill, `batches were settled after the kill (${batchAtKill} before, ${n} in all)`);
    t.same(
      batches.map((r) => Number(r[0])),
      Array.from({ length: n }, (_, i) => i + 1),
      'batches are numbered 1..n without a gap',
    );
    t.same(
      batches.filter((r) => Number(r[1]) !== Number(r[2])),
      [],
      "each batch's count is the calls settled in it",
    );
    t.equal(
      batches.reduce((sum, r) => sum + Number(r[1]), 0),
      answered.length,
      'the batches hold every call once',
    );

    const receipts = (
      await rawQuery(at, 'SELECT v, batch, prev, root, tree_size, refunds, premiums, settled_at, kid, sig FROM receipts ORDER BY batch')
    ).map((r): ReceiptFields => ({
      v: Number(r[0]) as ReceiptFields['v'],
      batch: Number(r[1]),
      prev: String(r[2]),
      root: String(r[3]),
      tree_size: Number(r[4]),
      refunds: Number(r[5]),
      premiums: Number(r[6]),
      settled_at: String(r[7]),
      kid: String(r[8]),
      sig: String(r[9]),
    }));
    t.same(
      receipts.map((r) => r.batch),
      Array.from({ length: n }, (_, i) => i + 1),
      'one receipt per batch',
    );
    const broken = receipts.filter((r, i) => r.prev !== (i === 0 ? GENESIS_PREV : receiptHash(receipts[i - 1]!)));
    t.same(
      broken.map((r) => r.batch),
      [],
      "each receipt's prev is the hash of the previous batch's receipt: no fork",
    );
    t.same(
      receipts.filter((r, i) => r.tree_size !== Number(batches[i]![1])).map((r) => r.batch),
      [],
      "each receipt's tree holds its batch's calls",
    );
    t.same(
      [receipts.reduce((sum, r) => sum + r.refunds, 0), receipts.reduce((sum, r) => sum + r.premiums, 0)],
      [refunds, premiums],
      'the receipts state every refund and premium once',
    );

    const cli = (args: string[]) => svcctl(['--control', survivor.url, ...args], { SVC_ADMIN_TOKEN: adminToken });
    const ledger = await cli(['ledger', 'verify', '--json']);
    t.equal(ledger.code, 0, `svcctl ledger verify passes: ${ledger.stdout}${ledger.stderr}`);
    t.equal(ledger.json().counts.settled_calls, answered.length, 'the ledger counts every call settled');
    const verified = await cli(['receipts', 'verify', '--json']);
    t.equal(verified.code, 0, `svcctl receipts verify passes: ${verified.stdout}${verified.stderr}`);
    t.equal(verified.json().receipts, n, 'over the whole chain');
  });
}
