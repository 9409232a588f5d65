/**
 * A control that stops running in the middle of a transaction (frozen, paused, its host cut off
 * with the connection still open) holds the store's writer lock; PostgreSQL ends its session
 * once the transaction has sat idle `idleInTransactionMs`, so the other controls' changes go on
 * instead of waiting for TCP to give up. The frozen one, when it runs again, finds its
 * transaction failed and nothing of it committed.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import type { Store } from '../../control/store';
import { IDLE_IN_TRANSACTION_MS, PgStore } from '../../control/store/pg/store';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { makeReceipts } from '../../control/receipts/maker';

const bump = (store: Store, action: string, during?: () => Promise<void>) =>
  store.mutate({ actor: 'test', now: Date.now() }, { action, changes: [{ kind: 'flags', entity: '*' }] }, async () => {
    await during?.();
  });

t.test('a transaction left idle past the limit is ended, and its writer lock with it', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const url = await createDatabase(t);
  const frozen = await PgStore.open(url, { dataDir: t.testdir(), idleInTransactionMs: 300, receiptsCore: makeReceipts });
  t.teardown(() => frozen.close());
  const other = await PgStore.open(url, { dataDir: t.testdir(), receiptsCore: makeReceipts });
  t.teardown(() => other.close());
  const before = await other.version();

  let entered!: () => void;
  const holding = new Promise<void>((resolve) => (entered = resolve));
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  // Inside its transaction, holding the writer lock, it stops running until the test wakes it.
  const stuck = bump(frozen, 'test.frozen', async () => {
    entered();
    await woken;
  }).then(
    () => null,
    (err: unknown) => err,
  );
  await holding;
  // The frozen one is woken only after this commit: had its lock not been ended, this would wait forever.
  const done = await bump(other, 'test.other');
  t.equal(done.version, before + 1, 'the other store’s change committed while the frozen one still slept: the next version is its');
  wake();
  const err = await stuck;
  t.ok(err instanceof Error, `the frozen transaction failed when it ran again (${String(err)})`);
  t.equal(await other.version(), before + 1, 'nothing of it was committed');
  t.same(
    (await other.audit.list(10)).map((row) => row.action).filter((a) => a.startsWith('test.')),
    ['test.other'],
    'one audit row: the other store’s',
  );
  // And the frozen store works again, on a new connection.
  t.equal((await bump(frozen, 'test.frozen-again')).version, before + 2);
});

t.test('a transaction holding the writer lock has a limit of its own, under the session’s', async (t) => {
  if (skipWithoutPostgres(t)) return;
  const url = await createDatabase(t);
  // The session lets a transaction sit idle 30 s (IDLE_IN_TRANSACTION_MS); one holding the writer lock, 300 ms.
  const frozen = await PgStore.open(url, { dataDir: t.testdir(), writerIdleMs: 300, receiptsCore: makeReceipts });
  t.teardown(() => frozen.close());
  const other = await PgStore.open(url, { dataDir: t.testdir(), receiptsCore: makeReceipts });
  t.teardown(() => other.close());

  let entered!: () => void;
  const holding = new Promise<void>((resolve) => (entered = resolve));
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const stuck = bump(frozen, 'test.frozen', async () => {
    entered();
    await woken;
  }).then(
    () => null,
    (err: unknown) => err,
  );
  await holding;
  const began = performance.now();
  await bump(other, 'test.other');
  const waitedMs = Math.round(performance.now() - began);
  t.comment(`the other store's change waited ${waitedMs} ms for the writer lock`);
  t.ok(waitedMs < IDLE_IN_TRANSACTION_MS / 3, `it waited for the writer's limit, not the session's (${waitedMs} ms)`);
  wake();
  t.ok((await stuck) instanceof Error, 'the frozen transaction failed when it ran again');
});
