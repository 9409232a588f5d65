/**
 * Prepaid balances across gateways (docs/money.md, "Prepaid endpoints"), with real processes:
 * three gateways, on two controls sharing one PostgreSQL database (and, the same, on SQLite with
 * one control). Twenty accounts each hold 100 premiums and are called at ten times what they
 * hold, round-robin through the gateways, several calls in flight: per account at most
 * 100 + 3 calls are admitted (the bound the design states; by construction it is 100), the rest
 * answered 402 `svc_payment_required` with nothing forwarded and nothing recorded; a deposit
 * with `--wait` reopens the account on every gateway; every admitted call settles charged
 * exactly its premium; `ledger verify` passes.
 */
import t, { type Test } from 'tap';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE } from '../../control/bootstrap';
import { METRICS_TOKEN_FILE } from '../../protocol/bearer';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import {
  adminRequest,
  GENEROUS_LIMITS,
  health,
  request,
  spawnService,
  startControlProcess,
  svcctl,
  testdirAfterTeardowns,
  waitFor,
  type ServiceProcess,
} from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

const ACCOUNTS = 20;
const PREMIUM = 1_000;
/** What each account holds: 100 premiums. */
const BALANCE = 100 * PREMIUM;
/** Calls per account: ten times what its balance allows. */
const CALLS = 1_000;
/** Calls in flight at once. */
const IN_FLIGHT = 8;
const GATEWAYS = 3;

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();

interface Cluster {
  controls: ServiceProcess[];
  /** Control data dirs (the CLI's `--data-dir`), one per control. */
  dirs: string[];
  gateways: ServiceProcess[];
  adminToken: string;
  metricsToken: string;
  env: NodeJS.ProcessEnv;
}

async function startCluster(t: Test, controls: number, databaseUrl: string | null): Promise<Cluster> {
  const dir = testdirAfterTeardowns(t);
  const env: NodeJS.ProcessEnv = {
    ...GENEROUS_LIMITS,
    SVC_SETTLER_CADENCE_MS: '500',
    ...(databaseUrl ? { SVC_DATABASE_URL: databaseUrl } : {}),
  };
  const dirs = Array.from({ length: controls }, (_, i) => join(dir, `control-${i + 1}`));
  const started = [await startControlProcess(t, { dataDir: dirs[0]!, env })];
  for (const d of dirs.slice(1)) {
    // The other controls accept the first's tokens: they read them from their own data dirs.
    mkdirSync(d, { recursive: true, mode: 0o700 });
    for (const file of [ADMIN_TOKEN_FILE, SYNC_TOKEN_FILE, METRICS_TOKEN_FILE]) copyFileSync(join(dirs[0]!, file), join(d, file));
    started.push(await startControlProcess(t, { dataDir: d, env }));
  }
  const syncToken = read(dirs[0]!, SYNC_TOKEN_FILE);
  const metricsToken = read(dirs[0]!, METRICS_TOKEN_FILE);
  const gateways: ServiceProcess[] = [];
  for (let g = 0; g < GATEWAYS; g++) {
    // Each gateway starts on another control of the list: the gateways spread over the controls.
    const order = started.map((_, i) => started[(g + i) % started.length]!.url);
    const args = ['--data-dir', join(dir, `gw-${g + 1}`), '--host', '127.0.0.1', '--gateway-port', '0', '--id', `gw-${g + 1}`];
    for (const url of order) args.push('--control', url);
    gateways.push(
      await spawnService(t, 'gateway', args, { ...GENEROUS_LIMITS, SVC_SYNC_TOKEN: syncToken, SVC_METRICS_TOKEN: metricsToken }),
    );
  }
  return { controls: started, dirs, gateways, adminToken: read(dirs[0]!, ADMIN_TOKEN_FILE), metricsToken, env };
}

function prepaidAcrossGateways(t: Test, controls: number, databaseUrl: () => Promise<string | null>): void {
  t.test(
    `${GATEWAYS} gateways on ${controls} control(s): no account spends past its balance; a deposit reopens it everywhere`,
    async (t) => {
      const c = await startCluster(t, controls, await databaseUrl());
      const admin = (i: number, method: string, path: string, body?: unknown) =>
        adminRequest(c.controls[i % controls]!, c.adminToken, method, path, body);
      const cli = (args: string[]) => svcctl(['--data-dir', c.dirs[0]!, ...args], c.env);
      const up = await startUpstream(t);
      // No call may fail (a refund would add to the account's money while it is spent): an SLA and
      // timeout no loaded machine reaches.
      const added = await admin(0, 'POST', '/_admin/v1/endpoints', {
        id: 'ep',
        upstream: `${up.url}/base`,
        price: 0,
        premium: PREMIUM,
        billing: 'prepaid',
        sla_ms: 120_000,
        timeout_ms: 120_000,
      });
      t.equal(added.status, 201, added.text);
      // The pool covers the calls (an empty one would admit them uncovered, paying nothing).
      const funded = await admin(0, 'POST', '/_admin/v1/pool/fund', { amount: 1_000_000_000 });
      t.equal(funded.status, 201, funded.text);

      const accounts: { id: string; name: string; key: string }[] = [];
      for (let i = 0; i < ACCOUNTS; i++) {
        const name = `agent-${i}`;
        const account = await admin(i, 'POST', '/_admin/v1/accounts', { name });
        t.equal(account.status, 201, account.text);
        const key = await admin(i, 'POST', '/_admin/v1/keys', { name, account: name });
        t.equal(key.status, 201, key.text);
        const deposit = await admin(i, 'POST', `/_admin/v1/accounts/${name}/deposit`, { amount: BALANCE, reference: `first-${i}` });
        t.equal(deposit.status, 201, deposit.text);
        accounts.push({ id: account.body.id as string, name, key: key.body.key as string });
      }
      const version = (await admin(0, 'GET', '/_admin/v1/status')).body.version as number;
      await Promise.all(
        c.gateways.map((gw) =>
          waitFor(async () => (await health(gw.url, c.metricsToken)).body?.snapshot_version >= version, `${gw.url} to apply the setup`),
        ),
      );
      // And to cover: the control that took the funding told its gateways at once, the other
      // control tells its own at its next evaluation (each second). A call before that would be
      // admitted uncovered, paying nothing.
      await Promise.all(
        c.gateways.map((gw) =>
          waitFor(
            async () => ((await health(gw.url, c.metricsToken)).body?.coverage?.allowance ?? 0) >= ACCOUNTS * BALANCE,
            `${gw.url} to cover with the funded pool`,
          ),
        ),
      );

      const hits = () => up.requests.length;
      const before = hits();
      const admitted = new Map<string, number>();
      const refusals: { status: number; body: Record<string, unknown> }[] = [];
      let other = 0;
      await Promise.all(
        accounts.map(async (a) => {
          let next = 0;
          const worker = async () => {
            while (next < CALLS) {
              const i = next++;
              const res = await request(c.gateways[i % GATEWAYS]!.url, '/v1/ep/x', {
                body: '{}',
                headers: { authorization: `Bearer ${a.key}` },
              });
              if (res.status === 200) admitted.set(a.id, (admitted.get(a.id) ?? 0) + 1);
              else if (res.status === 402) refusals.push({ status: res.status, body: res.body as Record<string, unknown> });
              else other++;
            }
          };
          await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
        }),
      );
      t.equal(other, 0, 'every call was admitted or refused 402');
      let total = 0;
      for (const a of accounts) {
        const n = admitted.get(a.id) ?? 0;
        total += n;
        t.ok(n <= 100 + GATEWAYS, `${a.name}: ${n} admitted, at most its 100 premiums plus one per gateway`);
        t.ok(n > 0, `${a.name}: its balance was spent`);
      }
      t.equal(hits() - before, total, 'only admitted calls reached the upstream');
      t.equal(refusals.length, ACCOUNTS * CALLS - total, 'every other call was refused');
      t.match(refusals[0]!.body, {
        code: 'svc_payment_required',
        status: 402,
        required: PREMIUM,
        available: Number,
        account_id: /^acc_/,
      });
      t.ok((refusals[0]!.body.available as number) < PREMIUM, 'a refusal says the gateway holds less than the premium');
      t.comment(`admitted ${total} of ${ACCOUNTS * 100} premiums' worth across ${GATEWAYS} gateways`);

      // A deposit, propagated with --wait, reopens the account on every gateway.
      const topped = accounts[0]!;
      const deposit = await cli(['accounts', 'deposit', topped.name, String(10 * PREMIUM), '--reference', 'top-up', '--wait', '--json']);
      t.equal(deposit.code, 0, deposit.stderr);
      t.match(JSON.parse(deposit.stdout), { created: true, amount: 10 * PREMIUM, propagation: { gateways: GATEWAYS } });
      for (const gw of c.gateways) {
        const res = await request(gw.url, '/v1/ep/x', { body: '{}', headers: { authorization: `Bearer ${topped.key}` } });
        t.equal(res.status, 200, `${gw.url} admits the topped-up account again`);
      }

      // Every admitted call settles, charged exactly its premium, and the ledger holds.
      await Promise.all(
        c.gateways.map((gw) =>
          waitFor(async () => (await health(gw.url, c.metricsToken)).body?.journal_backlog === 0, `${gw.url} drained`),
        ),
      );
      const settled = async () => {
        const res = await admin(0, 'GET', '/_admin/v1/settler');
        return res.body?.backlog === 0 ? res.body : null;
      };
      await waitFor(settled, 'every call settled', 60_000);
      const balances = await cli(['ledger', 'balances', '--account', 'account:', '--json']);
      t.equal(balances.code, 0, balances.stderr);
      const byAccount = new Map<string, number>(
        (JSON.parse(balances.stdout) as { balances: { account: string; balance: number }[] }).balances.map((b) => [b.account, b.balance]),
      );
      for (const a of accounts) {
        const paid = (admitted.get(a.id) ?? 0) + (a === topped ? GATEWAYS : 0);
        const held = a === topped ? BALANCE + 10 * PREMIUM : BALANCE;
        t.equal(
          byAccount.get(`account:${a.id}`),
          held - paid * PREMIUM,
          `${a.name}: charged one premium per admitted call, never below zero`,
        );
      }
      const verify = await cli(['ledger', 'verify']);
      t.equal(verify.code, 0, verify.stdout + verify.stderr);
      t.match(verify.stdout, /^Ledger OK: /);
    },
  );
}

t.test('postgres', async (t) => {
  if (skipWithoutPostgres(t)) return;
  prepaidAcrossGateways(t, 2, () => createDatabase(t));
});

t.test('sqlite', async (t) => {
  prepaidAcrossGateways(t, 1, async () => null);
});
