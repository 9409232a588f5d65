/**
 * Several stores on one PostgreSQL database hear each other's state versions: a change committed
 * through one fires every other store's `onVersion` listeners (LISTEN/NOTIFY in the bumping
 * transaction), each version once and only moving forward; and a store whose listening
 * connection is killed opens another and still hears what was committed meanwhile.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { Client } from 'pg';
import type { Store } from '../../control/store';
import type { PgStore } from '../../control/store/pg/store';
import { skipWithoutPostgres } from '../fixtures/postgres';
import { waitFor } from '../fixtures/stack';
import { openTestStore } from '../fixtures/stores';

/** A change gateways must see: bumps the state version once. */
const bump = (store: Store) =>
  store.mutate({ actor: 'test', now: Date.now() }, { action: 'test.bump', changes: [{ kind: 'flags', entity: '*' }] }, () => undefined);

if (!skipWithoutPostgres(t)) {
  t.test('a version committed through one store reaches the other, once', async (t) => {
    const a = (await openTestStore(t, 'postgres')) as PgStore;
    const b = (await openTestStore(t, 'postgres', { databaseUrl: a.url, dataDir: t.testdir() })) as PgStore;
    const heardA: number[] = [];
    const heardB: number[] = [];
    a.onVersion((v) => heardA.push(v));
    b.onVersion((v) => heardB.push(v));

    const first = await bump(a);
    await waitFor(() => heardB.includes(first.version), 'B to hear the version committed through A');
    const second = await bump(b);
    await waitFor(() => heardA.includes(second.version), 'A to hear the version committed through B');
    await bump(a);
    const third = await bump(a);
    await waitFor(() => heardB.includes(third.version), 'B to hear the last version');
    // Each store heard its own bumps at once and the other's through NOTIFY: never one twice, never going back.
    for (const [name, heard] of [
      ['A', heardA],
      ['B', heardB],
    ] as const) {
      t.same(
        heard,
        [...heard].sort((x, y) => x - y),
        `${name} heard versions in order`,
      );
      t.equal(new Set(heard).size, heard.length, `${name} heard no version twice`);
    }
    t.equal(heardA[heardA.length - 1], third.version);
  });

  t.test('a store whose listening connection is killed still hears later changes', async (t) => {
    const a = (await openTestStore(t, 'postgres')) as PgStore;
    const b = (await openTestStore(t, 'postgres', { databaseUrl: a.url, dataDir: t.testdir() })) as PgStore;
    const heard: number[] = [];
    b.onVersion((v) => heard.push(v));

    const admin = new Client({ connectionString: a.url });
    await admin.connect();
    t.teardown(() => admin.end());
    const pid = b.listenerPid;
    t.type(pid, 'number', 'B listens on a connection of its own');
    const killed = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
    t.equal(killed.rows[0]!.ok, true, "B's listening connection is terminated");

    // Committed right away: B may not listen again yet, and must still hear it.
    const change = await bump(a);
    await waitFor(() => heard.includes(change.version), 'B to hear the change committed while it was not listening');
    await waitFor(() => b.listenerPid !== null && b.listenerPid !== pid, 'B to listen on a new connection');
    const later = await bump(a);
    await waitFor(() => heard.includes(later.version), 'B to hear a change committed after it listens again');
  });
}
