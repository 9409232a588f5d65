/**
 * The database file and SQLite's -wal and -shm are 0600 whatever the umask (they hold injected
 * upstream credentials), and a database file an earlier version left readable by others is
 * tightened when it is opened.
 */
import t from 'tap';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../control/store/db';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

t.test('a new database, its -wal and -shm are 0600 with umask 000', async (t) => {
  const path = join(t.testdir(), 'control.db');
  const umask = process.umask(0);
  let db;
  try {
    db = openDatabase(path);
    db.exec('CREATE TABLE probe (x INTEGER)');
    db.prepare('INSERT INTO probe VALUES (1)').run();
  } finally {
    process.umask(umask);
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) t.equal(mode(file), '600', `${file.slice(path.length - 10)} is 0600`);
  db.close();
});

t.test('loose modes left by an earlier version are tightened on open', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'control.db');
  openDatabase(path).close();
  chmodSync(path, 0o644);
  // A -wal and -shm readable by others, as a crash under an earlier version would leave them.
  for (const file of [`${path}-wal`, `${path}-shm`]) {
    writeFileSync(file, '');
    chmodSync(file, 0o644);
  }
  const db = openDatabase(path);
  for (const file of [path, `${path}-wal`, `${path}-shm`]) t.equal(mode(file), '600', `${file.slice(path.length - 10)} is 0600`);
  db.close();
});
