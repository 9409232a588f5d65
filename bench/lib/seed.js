'use strict';
/**
 * Fill a control database with issued keys directly through the project's own store, in one
 * `store.mutate()` transaction: every key is a normal `keys` + `key_secrets` row pair made by
 * `store.keys.insert()`, and the state version is bumped once with one `key` change per key,
 * exactly what `keys issue` records, so both full snapshots and deltas stay consistent.
 *
 * Control must not be running on the same database while this runs (its sync hub would not
 * hear about the version bump).
 */
const path = require('node:path');
const { distDir } = require('./app');

/** A limit no benchmark can exhaust: 10^9 calls per second (the admin API's maximum count). */
const UNTHROTTLED = { count: 1_000_000_000, window_seconds: 1 };

/**
 * Insert `count` keys into the database at `dbPath` (created and migrated if missing).
 * With `withLoadKey`, the first key gets an unthrottled limit and its plaintext is returned.
 * @returns {Promise<{ inserted: number, version: number, ms: number, loadKey: {id: string, key: string}|null }>}
 */
async function seedKeys(dbPath, count, { withLoadKey = false, actor = 'bench', label = 'bench' } = {}) {
  const { SqliteStore } = require(path.join(distDir(), 'control', 'store', 'index.js'));
  const { generateKey, hashKey, keyStub, newId } = require(path.join(distDir(), 'protocol', 'keys.js'));
  const started = Date.now();
  const store = SqliteStore.open(dbPath);
  try {
    // Connection-local: a bigger page cache keeps the random-order B-tree inserts in memory
    // until the single commit. Durability settings are left exactly as the store set them.
    store.db.pragma('cache_size = -524288'); // 512 MiB
    const now = Date.now();
    let loadKey = null;
    const changes = new Array(count);
    const { version } = await store.mutate(
      { actor, now },
      { action: 'bench.seed_keys', target: null, detail: { count, label }, changes },
      () => {
        for (let i = 0; i < count; i++) {
          const key = generateKey();
          const id = newId('key');
          const limited = withLoadKey && i === 0;
          store.sync.keys.insert({
            id,
            name: limited ? `${label}-load` : null,
            prefix: keyStub(key),
            hash: hashKey(key),
            created_at: now,
            created_by: actor,
            expires_at: null,
            wallet: null,
            endpoints: [],
            limit: limited ? UNTHROTTLED : null,
            application_id: null,
          });
          changes[i] = { kind: 'key', entity: id };
          if (limited) loadKey = { id, key };
        }
      },
    );
    return { inserted: count, version, ms: Date.now() - started, loadKey };
  } finally {
    await store.close();
  }
}

module.exports = { seedKeys, UNTHROTTLED };
