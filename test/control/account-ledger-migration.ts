/**
 * SQLite's migration 21 and PostgreSQL's 12: accounts hold the money. An install from before it
 * (keys with positive, negative and zero `key:` balances, a wallet, settled batches with their
 * receipts) is upgraded: each non-zero key balance moves to its account in one `move` transfer,
 * the wallet is copied to the account, `ledger verify` holds, and batches settled afterwards post
 * to the accounts. Also from the bare schema of migration 20, ledger rows written by hand.
 */
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { Pool } from 'pg';
import type { Outcome } from '../../protocol/outcome';
import { MIGRATIONS } from '../../control/store/migrations';
import { migratePg } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { SOL_A, T0, balance, batchPostings, fund, insertKey, settleAll } from '../fixtures/ledger';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import {
  newInstall,
  openInstall,
  rawExec,
  rawQuery,
  sqlitePath,
  UNDO_POOL_CAPITAL,
  UNDO_UNCOVERED,
  UNDO_PREPAID,
  type Install,
} from '../fixtures/store-sql';
import { forEachStore } from '../fixtures/stores';

/**
 * SQLite's ledger tables rebuilt as they were before migration 21 (its own rebuild, with the
 * CHECKs it widened narrowed back, and without the deposit references' index).
 */
const OLD_LEDGER_TABLES = MIGRATIONS[20]!
  .slice(0, MIGRATIONS[20]!.indexOf('UPDATE accounts'))
  .replace(", 'deposit', 'move', 'refill'", '')
  .replace(" OR account LIKE 'account:%'", '')
  .replace(/CREATE UNIQUE INDEX ledger_deposit_reference[^;]*;/, '');

/**
 * Take the install back to where migration 20 left it, as the settler before accounts would have:
 * the accounts' postings and balances become their key's (`account:acc_x` → `key:key_x`), the
 * accounts lose the wallet their key still holds, and the schema loses what migration 21 added
 * (the refills' table and column with it).
 */
async function backToMigration20(at: Install): Promise<void> {
  const rename = (table: string) =>
    `UPDATE ${table} SET account = 'key:key_' || substr(account, 13) WHERE substr(account, 1, 12) = 'account:acc_';`;
  const refills = `DROP TABLE account_refills; DROP INDEX ledger_refill_reference; DROP INDEX accounts_with_refill; ALTER TABLE accounts DROP COLUMN refill_by;`;
  await rawExec(
    at,
    `${UNDO_UNCOVERED.sqlite} ${UNDO_POOL_CAPITAL.sqlite} ${UNDO_PREPAID.sqlite} ${refills} ${rename('ledger_postings')} ${rename('account_balances')}
     UPDATE accounts SET wallet = NULL;
     ${OLD_LEDGER_TABLES}
     PRAGMA user_version = 20;`,
    `${UNDO_UNCOVERED.pg} ${UNDO_POOL_CAPITAL.pg} ${UNDO_PREPAID.pg} ${refills} ${rename('ledger_postings')} ${rename('account_balances')}
     UPDATE accounts SET wallet = NULL;
     DROP INDEX ledger_deposit_reference;
     ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_kind_check;
     ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_transfers_kind_check
       CHECK (kind IN ('fund', 'premium', 'treasury_fee', 'refund', 'payout'));
     ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_account_check;
     ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_account_check
       CHECK (account IN ('external', 'pool', 'treasury') OR account LIKE 'key:%');
     DELETE FROM svc_schema_migrations WHERE version = 12;`,
  );
}

/** The `move` transfers: reference (the key), actor, and postings by account. */
async function moves(at: Install): Promise<{ reference: string; actor: string; postings: Record<string, number> }[]> {
  const rows = await rawQuery(
    at,
    `SELECT t.id, t.reference, t.actor, p.account, p.amount FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
     WHERE t.kind = 'move' ORDER BY t.id, p.account`,
  );
  const out = new Map<number, { reference: string; actor: string; postings: Record<string, number> }>();
  for (const [id, reference, actor, account, amount] of rows) {
    const move = out.get(Number(id)) ?? { reference: String(reference), actor: String(actor), postings: {} };
    move.postings[String(account)] = Number(amount);
    out.set(Number(id), move);
  }
  return [...out.values()];
}

forEachStore(t, (t, kind) => {
  t.test('settled balances move to the accounts, wallets are copied, verify holds, and settling goes on', async (t) => {
    const at = await newInstall(t, kind);
    const econ = { price: 1000, premium: 100 };
    await t.test('settled before accounts held the money', async (t) => {
      const store = await openInstall(t, at);
      await saveEndpoint(store, 'ep', econ);
      await fund(store, 100_000);
      await insertKey(store, 'key_pos', T0, { wallet: SOL_A });
      await insertKey(store, 'key_neg', T0 + 1);
      await insertKey(store, 'key_zero', T0 + 2);
      const calls = [
        ...(['server_error', 'server_error', 'ok'] as Outcome[]).map((k, i) => outcome({ key_id: 'key_pos', outcome: k, started: T0 + i })),
        ...[0, 1, 2].map((i) => outcome({ key_id: 'key_neg', started: T0 + 10 + i })),
        ...Array.from({ length: 11 }, (_, i) => outcome({ key_id: 'key_zero', started: T0 + 20 + i })),
        outcome({ key_id: 'key_zero', outcome: 'server_error', started: T0 + 40 }),
      ];
      await store.outcomes.ingest(calls, T0);
      t.equal((await settleAll(store, 5)).length, 4, 'several batches, each with its receipt');
    });
    await backToMigration20(at);
    const before = Object.fromEntries(await rawQuery(at, `SELECT account, balance FROM account_balances WHERE account LIKE 'key:%'`));
    t.same(
      Object.fromEntries(Object.entries(before).map(([k, v]) => [k, Number(v)])),
      { 'key:key_pos': 2100, 'key:key_neg': -300, 'key:key_zero': 0 },
      'the install holds key balances: positive, negative and zero',
    );

    const store = await openInstall(t, at);
    t.equal(await balance(store, 'key:key_pos'), 0, "a key's balance goes to 0");
    t.equal(await balance(store, 'account:acc_pos'), 2100, "and its account's gets it");
    t.equal(await balance(store, 'key:key_neg'), 0);
    t.equal(await balance(store, 'account:acc_neg'), -300, 'a negative balance moves too');
    t.equal(await balance(store, 'account:acc_zero'), 0, 'nothing to move for a zero balance');
    t.same(
      (await moves(at)).map((m) => [m.reference, m.actor, m.postings]),
      [
        ['key_pos', 'migration', { 'account:acc_pos': 2100, 'key:key_pos': -2100 }],
        ['key_neg', 'migration', { 'account:acc_neg': -300, 'key:key_neg': 300 }],
      ],
      'one move per key whose balance is not 0, oldest key first',
    );
    t.equal((await store.accounts.byId('acc_pos'))?.wallet, SOL_A, "the key's wallet is its account's");
    t.equal((await store.keys.byId('key_pos'))?.wallet, SOL_A, 'and the key still shows it');
    t.equal((await store.accounts.byId('acc_neg'))?.wallet, null);
    t.same(
      (await store.ledger.payouts()).map((l) => [l.wallet, l.owed, l.keys.map((k) => k.id)]),
      [[SOL_A, 2100, ['acc_pos']]],
      'payouts read the accounts',
    );
    let verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? 'verify holds after the migration');

    await store.outcomes.ingest(
      [outcome({ key_id: 'key_pos', started: T0 + 100 }), outcome({ key_id: 'key_neg', outcome: 'server_error', started: T0 + 101 })],
      T0 + 1,
    );
    const [next] = await settleAll(store);
    const accounts = (await batchPostings(at, next!.id)).map((p) => p.account).filter((a) => a !== 'pool');
    t.same(accounts.sort(), ['account:acc_neg', 'account:acc_pos'], 'a batch settled afterwards posts to the accounts');
    t.equal(await balance(store, 'account:acc_pos'), 2000);
    t.equal(await balance(store, 'account:acc_neg'), 800);
    t.equal(await balance(store, 'key:key_pos'), 0, 'the key accounts keep their history only');
    verified = await store.ledger.verify();
    t.ok(verified.ok, verified.violation ?? 'verify holds after settling more');
  });
});

/** Ledger rows written as the settler before accounts wrote them, without batches. */
const LEDGER = `
  INSERT INTO ledger_transfers (id, at, kind, actor) VALUES (1, 1, 'fund', 'root'), (2, 2, 'refund', 'settler'), (3, 3, 'payout', 'root');
  INSERT INTO ledger_postings (transfer_id, account, amount) VALUES
    (1, 'external', -5000), (1, 'pool', 5000), (2, 'pool', -700), (2, 'key:key_AAAAAAAAAAAA', 700), (3, 'key:legacy', -200), (3, 'external', 200);
  UPDATE account_balances SET balance = -4800 WHERE account = 'external';
  UPDATE account_balances SET balance = 4300 WHERE account = 'pool';
  INSERT INTO account_balances (account, balance) VALUES ('key:key_AAAAAAAAAAAA', 700), ('key:legacy', -200);`;

const KEYS = `INSERT INTO keys (id, name, prefix, status, created_at, created_by, endpoints, wallet) VALUES
  ('key_AAAAAAAAAAAA', 'one', 'svc_beta_a', 'active', 1, 'root', '[]', '${SOL_A}'),
  ('legacy', NULL, 'svc_beta_b', 'revoked', 2, 'ops', '[]', NULL)`;

/** An install whose database is at migration 20 (SQLite) or 11 (PostgreSQL), holding `KEYS` and `LEDGER`. */
async function install20(t: Test, kind: 'sqlite' | 'postgres'): Promise<Install> {
  const at = await newInstall(t, kind);
  if (at.url === null) {
    const db = new Database(sqlitePath(at));
    for (const m of MIGRATIONS.slice(0, 19)) db.exec(m);
    db.exec(KEYS);
    db.exec(MIGRATIONS[19]!);
    db.exec(LEDGER);
    db.pragma('user_version = 20');
    db.close();
    return at;
  }
  const pool = new Pool({ connectionString: at.url, types: PG_TYPES, max: 1 });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 10));
    await pool.query(KEYS);
    await migratePg(pool, PG_MIGRATIONS.slice(0, 11));
    await pool.query(LEDGER);
    await pool.query(`SELECT setval(pg_get_serial_sequence('ledger_transfers', 'id'), 3)`);
  } finally {
    await pool.end();
  }
  return at;
}

t.test('from the schema of migration 20 itself', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await install20(t, kind);
    const store = await openInstall(t, at);
    t.equal(await balance(store, 'account:acc_AAAAAAAAAAAA'), 700);
    t.equal(await balance(store, 'account:acc_legacy'), -200);
    t.equal(await balance(store, 'key:key_AAAAAAAAAAAA'), 0);
    t.equal(await balance(store, 'key:legacy'), 0);
    t.same(
      (await moves(at)).map((m) => m.reference),
      ['key_AAAAAAAAAAAA', 'legacy'],
    );
    t.equal((await store.accounts.byId('acc_AAAAAAAAAAAA'))?.wallet, SOL_A, 'the wallet is copied');
    const made = await store.mutate({ actor: 'root', now: T0 }, { action: 'accounts.deposit' }, (tx) =>
      tx.ledger.deposit('acc_legacy', 1000, 'inv-1', T0, 'root'),
    );
    t.match(made.result, { transfer_id: 6, created: true, balance: 800 }, 'the widened CHECKs take a deposit, ids go on after the moves');
  });
});
