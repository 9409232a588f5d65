// The money commands and their admin routes in-process: pool fund/show (micro-units and
// decimals), ledger verify and balances, payouts list/mark-paid, endpoints with a response
// schema; exit codes 0/1/2, audit rows, problem+json for what the ledger refuses.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatUnits } from '../../cli/money';
import { parseAmount } from '../../cli/options';
import type { SqliteStore } from '../../control/store';
import { ownAccountId } from '../../control/store/keys';
import { snapshotEndpoint } from '../../control/sync/snapshot';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { forEachStore } from '../fixtures/stores';

const SOL = 'So11111111111111111111111111111111111111112';

t.test('amounts on the command line', async (t) => {
  t.equal(parseAmount('A', '12500000'), 12_500_000, 'a whole number is micro-units');
  t.equal(parseAmount('A', '12.5'), 12_500_000, 'a decimal is units');
  t.equal(parseAmount('A', '0.000001'), 1);
  t.equal(parseAmount('A', '.5'), 500_000);
  t.equal(parseAmount('A', '3.'), 3_000_000);
  t.equal(parseAmount('A', ' 7 '), 7);
  for (const bad of ['', '.', '-1', '1e6', '0', '0.0', '1.0000001', '12,5', 'abc', '99999999999999999999']) {
    t.throws(() => parseAmount('AMOUNT', bad), { name: 'UsageError' }, JSON.stringify(bad));
  }
  t.equal(formatUnits(12_500_000), '12.5');
  t.equal(formatUnits(7), '0.000007');
  t.equal(formatUnits(-1_000_000), '-1');
  t.equal(formatUnits(0), '0');
});

forEachStore(t, (t, kind) => {
  t.test('pool fund and show', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 3_600_000 } });
    const cli = (...args: string[]) => runCli(args, { control });
    const a = await cli('pool', 'fund', '12.5', '--note', 'seed money', '--json');
    t.equal(a.code, 0, a.stderr);
    t.match(a.json(), { amount: 12_500_000, transfer_id: Number, pool: { pool: 12_500_000, funded: 12_500_000 } });
    const b = await cli('pool', 'fund', '250');
    t.equal(b.code, 0);
    t.match(b.stdout, /Funded the pool with 0\.00025 \(250 micro\)/);
    for (const bad of ['0', '-5', '1.2345678', 'ten']) {
      const r = await cli('pool', 'fund', bad);
      t.equal(r.code, 2, `${bad}: usage error`);
      t.match(r.stderr, /^svcctl: AMOUNT/);
    }
    const api = await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1.5 });
    t.equal(api.status, 400, 'the API takes integer micro-units only');
    t.equal(api.body.code, 'svc_bad_request');

    const show = await cli('pool', 'show', '--json');
    t.match(show.json(), { pool: 12_500_250, treasury: 0, funded: 12_500_250, shortfall: 0, paid_out: 0, backlog: 0 });
    const human = await cli('pool', 'show');
    t.match(human.stdout, /pool: +12\.50025 \(12500250 micro\)/);
    const audit = (await control.handle.ctx.store.audit.list(10)).filter((e) => e.action === 'pool.fund');
    t.same(
      audit.map((e) => [e.actor, e.detail.amount]),
      [
        ['root', 250],
        ['root', 12_500_000],
      ],
      'funding is audited',
    );
    const balances = await cli('ledger', 'balances', '--json');
    t.same(balances.json().balances, [
      { account: 'external', balance: -12_500_250 },
      { account: 'pool', balance: 12_500_250 },
      { account: 'treasury', balance: 0 },
    ]);
    const one = await cli('ledger', 'balances', '--account', 'pool', '--json');
    t.same(one.json().balances, [{ account: 'pool', balance: 12_500_250 }]);
  });

  t.test('ledger verify: 0 when it holds, 1 with the first violation', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 3_600_000 } });
    const store = control.handle.ctx.store;
    await saveEndpoint(store, 'ep', { treasury_fee_bps: 500 });
    await runCli(['pool', 'fund', '1'], { control });
    await store.outcomes.ingest([outcome(), outcome({ outcome: 'server_error' })], Date.now());
    await runCli(['settler', 'run-once'], { control });
    const good = await runCli(['ledger', 'verify'], { control });
    t.equal(good.code, 0, good.stderr);
    t.match(good.stdout, /^Ledger OK: 19 invariants hold over 4 transfers/);
    // A corrupted row, written behind the store's back: raw SQL on SQLite's file (the ledger
    // store tests corrupt PostgreSQL's rows; here it is the command's exit code and output).
    if (kind !== 'sqlite') return;
    (store as SqliteStore).db.exec(`UPDATE account_balances SET balance = balance + 3 WHERE account = 'treasury'`);
    const bad = await runCli(['ledger', 'verify'], { control });
    t.equal(bad.code, 1);
    t.equal(bad.stderr, 'svcctl: ledger verify failed: account balances sum to 3, not 0');
    const json = await runCli(['ledger', 'verify', '--json'], { control });
    t.equal(json.code, 1);
    t.match(json.json(), { ok: false, violation: /sum to 3/ });
  });

  t.test('payouts list and mark-paid', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { 'settler.cadenceMs': 3_600_000 } });
    const store = control.handle.ctx.store;
    const cli = (...args: string[]) => runCli(args, { control });
    await saveEndpoint(store, 'ep', { price: 1_000_000, premium: 0 });
    const keyA = (await cli('keys', 'issue', '--name', 'a', '--wallet', SOL, '--json')).json().id as string;
    const keyB = (await cli('keys', 'issue', '--name', 'b', '--json')).json().id as string;
    await cli('pool', 'fund', '10.0');
    await store.outcomes.ingest(
      [
        outcome({ key_id: keyA, outcome: 'server_error' }),
        outcome({ key_id: keyA, outcome: 'server_error' }),
        outcome({ key_id: keyB, outcome: 'network_error' }),
      ],
      Date.now(),
    );
    await cli('settler', 'run-once');

    const list = await cli('payouts', 'list', '--json');
    t.same(list.json(), {
      payouts: [
        // Per account: each key's own here, named after the key.
        { wallet: SOL, owed: 2_000_000, keys: [{ id: ownAccountId(keyA), name: keyA, balance: 2_000_000 }] },
        { wallet: null, owed: 1_000_000, keys: [{ id: ownAccountId(keyB), name: keyB, balance: 1_000_000 }] },
      ],
      total_owed: 3_000_000,
    });
    const human = await cli('payouts', 'list');
    t.match(human.stdout, /\(no wallet yet\)/);
    t.match(human.stdout, /Total owed: 3 \(3000000 micro\)/);
    t.equal((await cli('payouts', 'list', '--wallet', 'nope')).code, 2);

    const over = await cli('payouts', 'mark-paid', '--wallet', SOL, '--amount', '2.000001', '--reference', 'tx-1');
    t.equal(over.code, 1);
    t.match(over.stderr, /more than the 2000000 owed .*\(svc_conflict\)/);
    const paid = await cli('payouts', 'mark-paid', '--wallet', SOL, '--amount', '1.5', '--reference', 'tx-1', '--json');
    t.equal(paid.code, 0, paid.stderr);
    t.match(paid.json(), {
      wallet: SOL,
      amount: 1_500_000,
      reference: 'tx-1',
      paid: [{ account_id: ownAccountId(keyA), amount: 1_500_000 }],
      owed: 500_000,
    });
    const dup = await control.admin('POST', '/_admin/v1/payouts/mark-paid', { wallet: SOL, amount: 1, reference: 'tx-1' });
    t.equal(dup.status, 409);
    t.match(dup.body, { code: 'svc_conflict', reason: 'duplicate_reference' });
    t.equal((await cli('payouts', 'mark-paid', '--wallet', SOL, '--amount', '1', '--reference', ' ')).code, 2);

    // A wallet attached later is owed what the key accrued before.
    const attach = await cli('keys', 'wallet', keyB, SOL);
    t.equal(attach.code, 0);
    t.same((await cli('payouts', 'list', '--wallet', SOL, '--json')).json().payouts[0].owed, 1_500_000);
    const audit = (await store.audit.list(20)).filter((e) => e.action === 'payouts.mark_paid');
    t.same(
      audit.map((e) => [e.target, e.detail.amount, e.detail.reference]),
      [[SOL, 1_500_000, 'tx-1']],
      'payments are audited; refused ones leave no row',
    );
    t.equal((await cli('ledger', 'verify')).code, 0);
    t.match((await cli('pool', 'show', '--json')).json(), { paid_out: 1_500_000, owed_to_keys: 1_500_000 });
  });

  t.test('endpoints carry an optional response schema', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const dir = t.testdir();
    const cli = (...args: string[]) => runCli(args, { control });
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ type: 'object', required: ['id'], properties: { id: { type: 'integer' } } }));
    const unsupported = join(dir, 'bad.json');
    writeFileSync(unsupported, JSON.stringify({ type: 'object', patternProperty: {} }));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"type":');

    t.equal((await cli('endpoints', 'add', 'ep', '--upstream', 'http://127.0.0.1:9/x')).code, 0);
    t.equal((await cli('endpoints', 'show', 'ep', '--json')).json().response_schema, null);
    const set = await cli('endpoints', 'update', 'ep', '--response-schema', good, '--json');
    t.equal(set.code, 0, set.stderr);
    t.same(set.json().response_schema, { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } });
    const row = (await control.handle.ctx.store.endpoints.byId('ep'))!;
    t.same(snapshotEndpoint(row).response_schema, set.json().response_schema, 'pushed to gateways in the snapshot');

    const refused = await cli('endpoints', 'update', 'ep', '--response-schema', unsupported);
    t.equal(refused.code, 2);
    t.match(refused.stderr, /response_schema: strict mode: unknown keyword: "patternProperty"/);
    const notJson = await cli('endpoints', 'update', 'ep', '--response-schema', broken);
    t.equal(notJson.code, 2);
    t.match(notJson.stderr, /is not valid JSON/);
    t.equal((await cli('endpoints', 'update', 'ep', '--response-schema', join(dir, 'missing.json'))).code, 2);

    const cleared = await cli('endpoints', 'update', 'ep', '--no-response-schema', '--json');
    t.equal(cleared.code, 0, cleared.stderr);
    t.equal(cleared.json().response_schema, null);
    t.notOk(
      'response_schema' in snapshotEndpoint((await control.handle.ctx.store.endpoints.byId('ep'))!),
      'absent from the snapshot when unset',
    );
    const added = await cli('endpoints', 'add', 'typed', '--upstream', 'http://127.0.0.1:9/x', '--response-schema', good, '--json');
    t.same(added.json().response_schema.required, ['id']);
  });
});
