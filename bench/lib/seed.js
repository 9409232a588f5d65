'use strict';
/**
 * Fill a control database with issued keys directly through the project's own store, in one
 * `store.mutate()` transaction: every key is a normal `keys` + `key_secrets` row pair made by
 * `store.keys.insert()`, and the state version is bumped once with one `key` change per key,
 * exactly what `keys issue` records, so both full snapshots and deltas stay consistent.
 *
 * Control must not be running on the same database while this runs (its sync hub would not
 * hear about the version bump). SQLite or, for `--store postgres`, a PostgreSQL database.
 */
const { internal } = require('./internals');

/** A limit no benchmark can exhaust: 10^9 calls per second (the admin API's maximum count). */
const UNTHROTTLED = { count: 1_000_000_000, window_seconds: 1 };

/** The key row `keys issue` would store for a fresh key. */
function newKey(keyMod, label, actor, now, limited) {
  const key = keyMod.generateKey();
  const id = keyMod.newId('key');
  return {
    key,
    row: {
      id,
      name: limited ? `${label}-load` : null,
      prefix: keyMod.keyStub(key),
      hash: keyMod.hashKey(key),
      created_at: now,
      created_by: actor,
      expires_at: null,
      wallet: null,
      endpoints: [],
      limit: limited ? UNTHROTTLED : null,
      application_id: null,
    },
  };
}

/**
 * Insert `count` keys into the database at `dbPath` (created and migrated if missing), or, with
 * `databaseUrl`, into that PostgreSQL database (its receipt signing key in `dataDir`).
 * With `withLoadKey`, the first key gets an unthrottled limit and its plaintext is returned.
 * @returns {Promise<{ inserted: number, version: number, ms: number, loadKey: {id: string, key: string}|null }>}
 */
async function seedKeys(dbPath, count, { withLoadKey = false, actor = 'bench', label = 'bench', databaseUrl = null, dataDir = null } = {}) {
  const keyMod = internal('protocol/keys');
  const { makeReceipts } = internal('control/receipts/maker');
  const started = Date.now();
  let store;
  if (databaseUrl === null) {
    const { SqliteStore } = internal('control/store/index');
    store = await SqliteStore.open(dbPath, { receiptsCore: makeReceipts });
    // Connection-local: a bigger page cache keeps the random-order B-tree inserts in memory
    // until the single commit. Durability settings are left exactly as the store set them.
    store.db.pragma('cache_size = -524288'); // 512 MiB
  } else {
    const { PgStore } = internal('control/store/pg/store');
    store = await PgStore.open(databaseUrl, { dataDir, receiptsCore: makeReceipts });
  }
  try {
    const now = Date.now();
    let loadKey = null;
    const changes = new Array(count);
    // `tx.keys.insert()` per key: a statement pair on the transaction's connection each (on
    // PostgreSQL about 1.1 ms per key on the 2-core VM: 100,000 in two minutes).
    const { version } = await store.mutate(
      { actor, now },
      { action: 'bench.seed_keys', target: null, detail: { count, label }, changes },
      async (tx) => {
        for (let i = 0; i < count; i++) {
          const limited = withLoadKey && i === 0;
          const { key, row } = newKey(keyMod, label, actor, now, limited);
          await tx.keys.insert(row);
          changes[i] = { kind: 'key', entity: row.id };
          if (limited) loadKey = { id: row.id, key };
        }
      },
    );
    const ms = Date.now() - started;
    if (databaseUrl !== null) await settle(databaseUrl);
    return { inserted: count, version, ms, loadKey };
  } finally {
    await store.close();
  }
}

/**
 * The seed's aftermath done before anything is measured: autovacuum would otherwise analyse
 * and vacuum the freshly written tables, and the checkpointer flush them, in the first minute
 * of the bench, billed to whatever step runs then (the first full snapshot). A database that
 * has been serving for a while has done both long ago.
 */
async function settle(databaseUrl) {
  const { Client } = require('pg');
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

module.exports = { seedKeys, UNTHROTTLED };
