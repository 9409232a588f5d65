/**
 * `store.gateways.ackedMany`, on both stores: the acks and sightings of many gateways in one
 * transaction, all stored or none, the rows of one gateway applied in order as `acked` and
 * `seen` one by one would.
 */
import t from 'tap';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = Date.UTC(2030, 0, 1, 12);
const SHA = (c: string) => c.repeat(64);

forEachStore(t, (t, kind) => {
  t.test('every row is stored: acks, sightings, new and known gateways, several rows of one gateway', async (t) => {
    const store = await openTestStore(t, kind);
    await store.gateways.acked('gw-known', 2, SHA('a'), NOW - 10);
    await store.gateways.seen('gw-seen', NOW - 20);
    await store.gateways.nacked('gw-nacked', 4, 'refused', NOW - 30);

    await store.gateways.ackedMany([
      { id: 'gw-new', at: NOW, version: 5, sha256: SHA('b') },
      { id: 'gw-known', at: NOW + 1, version: 5, sha256: SHA('c') },
      { id: 'gw-seen', at: NOW + 2 },
      { id: 'gw-nacked', at: NOW + 3, version: 3, sha256: null },
      { id: 'gw-fresh', at: NOW + 4 },
      // A later row of the same gateway wins, as when written one after another.
      { id: 'gw-known', at: NOW + 5, version: 6, sha256: SHA('d') },
      { id: 'gw-new', at: NOW + 6 },
    ]);

    const rows = new Map((await store.gateways.list()).map((r) => [r.id, r]));
    t.match(
      rows.get('gw-new'),
      { applied_version: 5, applied_sha256: SHA('b'), first_seen: NOW, last_seen: NOW + 6 },
      'a new gateway is inserted; its later sighting keeps the ack',
    );
    t.match(
      rows.get('gw-known'),
      { applied_version: 6, applied_sha256: SHA('d'), first_seen: NOW - 10, last_seen: NOW + 5 },
      'the last ack of a gateway wins',
    );
    t.match(
      rows.get('gw-seen'),
      { applied_version: 0, applied_sha256: null, first_seen: NOW - 20, last_seen: NOW + 2 },
      'a sighting moves last_seen only',
    );
    t.match(
      rows.get('gw-nacked'),
      { applied_version: 3, applied_sha256: null, last_nack_version: 4, last_nack_reason: 'refused', last_seen: NOW + 3 },
      'an ack keeps the last nack',
    );
    t.match(
      rows.get('gw-fresh'),
      { applied_version: 0, applied_sha256: null, first_seen: NOW + 4, last_seen: NOW + 4 },
      'a sighting of a new gateway inserts it',
    );

    await store.gateways.ackedMany([]);
    t.equal((await store.gateways.list()).length, 5, 'no rows: nothing written');
  });

  t.test('one transaction: a row the database refuses leaves every row of the batch unwritten', async (t) => {
    const store = await openTestStore(t, kind);
    await store.gateways.acked('gw-a', 1, SHA('a'), NOW);
    const before = await store.gateways.list();
    await t.rejects(
      store.gateways.ackedMany([
        { id: 'gw-a', at: NOW + 1, version: 2, sha256: SHA('b') },
        { id: 'gw-b', at: NOW + 2, version: 2, sha256: SHA('b') },
        // last_seen is NOT NULL: the database refuses this row.
        { id: 'gw-c', at: null as unknown as number, version: 2, sha256: SHA('b') },
      ]),
    );
    t.same(await store.gateways.list(), before, 'neither the ack of a known gateway nor a new one was stored');
  });
});
