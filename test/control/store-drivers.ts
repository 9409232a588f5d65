/**
 * Each store loads its own database driver and never the other's: a control on SQLite never
 * loads node-postgres, and one on PostgreSQL never loads better-sqlite3 (a native addon it would
 * otherwise need built on every machine). Checked in a child process of its own, on the build,
 * with the whole of control loaded and the store opened and queried, by listing the packages
 * Node loaded from `node_modules`.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { forEachStore, testDatabaseUrl } from '../fixtures/stores';

const DIST = resolve(__dirname, '..', '..', 'dist');

/** The child's script: load control, open the store, run a read, print the driver packages loaded. */
const SCRIPT = `
const { join } = require('node:path');
const [dist, dataDir, url] = process.argv.slice(1);
require(join(dist, 'control', 'server.js'));
const { openStore } = require(join(dist, 'control', 'store', 'open.js'));
const { makeReceipts } = require(join(dist, 'control', 'receipts', 'maker.js'));
(async () => {
  const store = await openStore({
    dataDir, databasePath: join(dataDir, 'control.db'), databaseUrl: url === '' ? null : url, receiptsCore: makeReceipts,
  });
  await store.flags.list();
  await store.close();
  const drivers = new Set();
  for (const file of Object.keys(require.cache)) {
    const found = /[\\\\/]node_modules[\\\\/](better-sqlite3|pg|pg-pool|pg-protocol)[\\\\/]/.exec(file);
    if (found) drivers.add(found[1]);
  }
  process.stdout.write(JSON.stringify([...drivers].sort()));
})().catch((err) => { console.error(err); process.exit(1); });
`;

async function driversLoaded(dataDir: string, url: string | null): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', SCRIPT, DIST, dataDir, url ?? ''], { timeout: 60_000 });
  return JSON.parse(stdout) as string[];
}

forEachStore(t, async (t, kind) => {
  const url = await testDatabaseUrl(t, kind);
  const drivers = await driversLoaded(t.testdir(), url);
  if (kind === 'sqlite') {
    t.same(drivers, ['better-sqlite3'], 'SQLite: better-sqlite3 loaded, node-postgres not');
  } else {
    t.ok(drivers.includes('pg'), 'PostgreSQL: node-postgres loaded');
    t.notOk(drivers.includes('better-sqlite3'), 'PostgreSQL: better-sqlite3 not loaded');
  }
});
