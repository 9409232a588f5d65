'use strict';
/**
 * Where each store keeps a database: SQLite a file `control.db` in a data dir, PostgreSQL a
 * database on the bench's cluster named after the data dir (which holds its signing key). A
 * "side" is one store's way to make the base database, copy it, open a copy, drop it, and
 * point a control at it.
 */
const fs = require('node:fs');
const path = require('node:path');
const { DIST, STORES, results } = require('./params');
const { internal } = require('../lib/internals');
const { startPostgres } = require('../lib/postgres');

const { SqliteStore, Store } = internal('control/store/index', DIST);
const { makeReceipts } = internal('control/receipts/maker', DIST);
const { startControl } = internal('control/server', DIST);
const { loadConfig } = internal('config/load', DIST);
const { silentLogger } = internal('runtime/log', DIST);

function sqliteSide(baseDir) {
  const file = (dataDir) => path.join(dataDir, 'control.db');
  return {
    kind: 'sqlite',
    pg: null,
    baseDir,
    // SQLite's own: the WAL is checkpointed after ingest.
    openBase: () => SqliteStore.open(file(baseDir), { receipts: false, receiptsCore: makeReceipts }),
    finishBase: async (store) => {
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      await store.close();
    },
    copy: async (dataDir) => fs.copyFileSync(file(baseDir), file(dataDir)),
    open: (dataDir, opts = {}) => Store.open(file(dataDir), { receiptsCore: makeReceipts, ...opts }),
    drop: async (dataDir) => fs.rmSync(dataDir, { recursive: true, force: true }),
    controlFlags: () => ({}),
  };
}

async function postgresSide(baseDir) {
  const { PgStore } = internal('control/store/pg/store', DIST);
  const pg = await startPostgres();
  const { Client } = require('pg');
  const dbName = (dataDir) =>
    `bench_${path
      .basename(dataDir)
      .replace(/[^a-z0-9]/gi, '_')
      .toLowerCase()}`;
  const url = (dataDir) => pg.cluster.url(dbName(dataDir));
  results.postgres = { version: pg.version, port: pg.cluster.port, settings: { durable: true, ...pg.settings } };
  console.log(
    `postgres: ${pg.version}, throwaway cluster on port ${pg.cluster.port} (fsync on${Object.keys(pg.settings).length ? `; ${JSON.stringify(pg.settings)}` : ''}${pg.logFile ? `; log → ${pg.logFile}` : ''})`,
  );
  return {
    kind: 'postgres',
    pg,
    baseDir,
    openBase: async () => {
      await pg.cluster.query(`CREATE DATABASE ${dbName(baseDir)}`);
      return PgStore.open(url(baseDir), { dataDir: baseDir, receipts: false, receiptsCore: makeReceipts });
    },
    // What autovacuum does to the tables of a million inserts (the outcome records and the
    // settler's queue), done now so every copy starts with the same statistics and visibility
    // map. Only those: autovacuum
    // leaves the small ones (one ledger transfer) unanalyzed below its 50-row threshold,
    // and analyzing them here would plan the ledger's foreign key checks as scans of a
    // one-page table for the whole run (bench/README.md, PostgreSQL).
    finishBase: async (store) => {
      await store.close();
      const client = new Client(url(baseDir));
      await client.connect();
      try {
        await client.query('VACUUM (ANALYZE) outcome_records, unsettled_outcomes');
        await client.query('CHECKPOINT');
      } finally {
        await client.end();
      }
    },
    // FILE_COPY: the copy is a checkpoint and a file copy, not 1M rows through the WAL.
    copy: (dataDir) => pg.cluster.query(`CREATE DATABASE ${dbName(dataDir)} TEMPLATE ${dbName(baseDir)} STRATEGY FILE_COPY`),
    open: (dataDir, opts = {}) => PgStore.open(url(dataDir), { dataDir, receiptsCore: makeReceipts, ...opts }),
    drop: async (dataDir) => {
      await pg.cluster.query(`DROP DATABASE IF EXISTS ${dbName(dataDir)}`);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
    controlFlags: async (dataDir, fresh) => {
      if (fresh) await pg.cluster.query(`CREATE DATABASE ${dbName(dataDir)}`);
      return { databaseUrl: url(dataDir) };
    },
  };
}

/** One side per store of the run, each with its base dir under `dir`. */
async function openSides(dir) {
  const sides = {};
  for (const kind of STORES) {
    const baseDir = path.join(dir, kind);
    fs.mkdirSync(baseDir);
    sides[kind] = kind === 'sqlite' ? sqliteSide(baseDir) : await postgresSide(baseDir);
    results.by_store[kind] = {};
  }
  return sides;
}

/** A real control (in this process) on `side`'s database in `dataDir`; `fresh`: a new, empty one. */
async function startBenchControl(side, dataDir, fresh, extraFlags = {}) {
  const config = loadConfig({
    env: {},
    flags: {
      dataDir,
      host: '127.0.0.1',
      'control.port': 0,
      'api.port': 0,
      'indexer.port': 0,
      'settler.cadenceMs': 3_600_000,
      ...(await side.controlFlags(dataDir, fresh)),
      ...extraFlags,
    },
  });
  return startControl(config, { log: silentLogger });
}

module.exports = { openSides, startBenchControl, silentLogger };
