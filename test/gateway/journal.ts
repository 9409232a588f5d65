// The outcome journal: append, pending, ack, segment deletion and replay after restart.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { Journal } from '../../gateway/journal/journal';
import type { OutcomeRecord } from '../../protocol/outcome';
import { tempDir } from './fixtures/temp-dir.cts';
import { outcomeRecord as record } from './fixtures/outcomes.cts';

const ids = (records: OutcomeRecord[]): number[] => records.map((r) => r.latency_ms);
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const segmentFiles = (dir: string): string[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.startsWith('outcomes-'))
    .sort();

t.test('appends come back from pending in order until acked', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 10; i++) journal.append(record(i));
  t.equal(journal.backlog(), 10);
  t.same(ids(journal.pending(4)), [1, 2, 3, 4]);
  t.same(ids(journal.pending(4)), [1, 2, 3, 4], 'pending does not consume');
  t.same(ids(journal.pending(100)), range(1, 10));
  t.same(journal.pending(0), []);
  t.same(journal.pending(1)[0], record(1), 'records round-trip unchanged');
  t.equal(journal.ack([record(1).call_id, record(2).call_id]), 2);
  t.equal(journal.backlog(), 8);
  t.same(ids(journal.pending(100)), range(3, 10));
});

t.test('ack ignores ids never handed out by pending, and repeats', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  journal.append(record(1));
  journal.append(record(2));
  t.equal(journal.ack([record(1).call_id]), 0, 'not handed out yet');
  t.equal(journal.ack(['not-a-call']), 0);
  journal.pending(1);
  t.equal(journal.ack([record(1).call_id, record(1).call_id]), 1);
  t.equal(journal.ack([record(1).call_id]), 0, 'already acked');
  t.equal(journal.backlog(), 1);
});

t.test('replay after restart returns exactly the unacked records, out-of-order acks included', async (t) => {
  const dir = tempDir(t);
  const first = Journal.open({ dir });
  for (let i = 1; i <= 10; i++) first.append(record(i));
  first.pending(10);
  first.ack([2, 3, 7].map((n) => record(n).call_id));
  t.equal(first.backlog(), 7);
  await first.close();

  const second = Journal.open({ dir });
  t.equal(second.backlog(), 7);
  t.same(ids(second.pending(100)), [1, 4, 5, 6, 8, 9, 10]);
  for (let i = 11; i <= 12; i++) second.append(record(i));
  second.ack([1, 4].map((n) => record(n).call_id));
  await second.close();

  const third = Journal.open({ dir });
  t.teardown(() => third.close());
  t.same(ids(third.pending(100)), [5, 6, 8, 9, 10, 11, 12]);
  t.equal(third.backlog(), 7);
});

t.test('replay without close (crash after appends) keeps every complete record', async (t) => {
  const dir = tempDir(t);
  const crashed = Journal.open({ dir, fsyncIntervalMs: 60_000 });
  for (let i = 1; i <= 5; i++) crashed.append(record(i));
  // No close(): the process "dies"; the records were written with writeSync.
  const reopened = Journal.open({ dir });
  t.teardown(() => reopened.close());
  t.same(ids(reopened.pending(100)), range(1, 5));
});

t.test('a torn last line (crash mid-write) is truncated and the rest replayed', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  for (let i = 1; i <= 5; i++) journal.append(record(i));
  await journal.close();
  const [segment] = segmentFiles(dir);
  const file = path.join(dir, segment!);
  const size = fs.statSync(file).size;
  fs.truncateSync(file, size - 17);

  const reopened = Journal.open({ dir });
  t.same(ids(reopened.pending(100)), range(1, 4));
  t.equal(reopened.backlog(), 4);
  t.equal(reopened.stats().tornBytes, JSON.stringify(record(5)).length + 1 - 17);
  t.equal(fs.readFileSync(file, 'utf8').endsWith('\n'), true, 'the torn bytes are gone from disk');
  reopened.append(record(6));
  await reopened.close();

  const again = Journal.open({ dir });
  t.teardown(() => again.close());
  t.same(ids(again.pending(100)), [1, 2, 3, 4, 6]);
  t.equal(again.stats().corruptLines, 0, 'no record was glued onto the torn fragment');
});

t.test('an unreadable line in the middle is skipped and counted', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  journal.append(record(1));
  await journal.close();
  const file = path.join(dir, segmentFiles(dir)[0]!);
  fs.appendFileSync(file, '{"garbage\n' + JSON.stringify(record(2)) + '\n');
  const reopened = Journal.open({ dir });
  t.teardown(() => reopened.close());
  t.same(ids(reopened.pending(100)), [1, 2]);
  t.equal(reopened.stats().corruptLines, 1);
  reopened.ack([record(1).call_id, record(2).call_id]);
  t.equal(reopened.backlog(), 0);
});

t.test('fully acked segments are deleted; nothing is replayed afterwards', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, segmentMaxBytes: 1024 });
  for (let i = 1; i <= 60; i++) journal.append(record(i));
  t.ok(segmentFiles(dir).length > 5, `${segmentFiles(dir).length} segments written`);
  const firstHalf = journal.pending(30);
  journal.ack(firstHalf.map((r) => r.call_id));
  t.same(ids(journal.pending(100)), range(31, 60));
  const rest = journal.pending(100);
  journal.ack(rest.map((r) => r.call_id));
  t.equal(journal.backlog(), 0);
  t.ok(segmentFiles(dir).length > 1, 'the unlinks run on the thread pool, after the ack returns');
  await journal.idle();
  t.equal(segmentFiles(dir).length, 1, 'only the active segment remains once idle');
  await journal.close();

  const reopened = Journal.open({ dir, segmentMaxBytes: 1024 });
  t.teardown(() => reopened.close());
  t.same(reopened.pending(100), []);
  t.equal(reopened.backlog(), 0);
});

t.test('rotation and deletion never block the event loop on the disk; close waits for them', async (t) => {
  const dir = tempDir(t);
  const blocking: string[] = [];
  const { fdatasyncSync, fsyncSync, rmSync, unlinkSync } = fs;
  fs.fdatasyncSync = (fd) => (blocking.push('fdatasyncSync'), fdatasyncSync(fd));
  fs.fsyncSync = (fd) => (blocking.push('fsyncSync'), fsyncSync(fd));
  fs.rmSync = (file, options) => (blocking.push('rmSync'), rmSync(file, options));
  fs.unlinkSync = (file) => (blocking.push('unlinkSync'), unlinkSync(file));
  t.teardown(() => Object.assign(fs, { fdatasyncSync, fsyncSync, rmSync, unlinkSync }));

  const journal = Journal.open({ dir, segmentMaxBytes: 1024 });
  blocking.length = 0; // opening may repair and sync what it found
  for (let i = 1; i <= 60; i++) journal.append(record(i));
  t.ok(segmentFiles(dir).length > 5, `${segmentFiles(dir).length} segments written`);
  journal.ack(journal.pending(100).map((r) => r.call_id));
  t.same(blocking, [], 'appends across rotations and acks that delete segments made no blocking sync or unlink');
  await journal.close();
  t.same(segmentFiles(dir).length, 1, 'close resolved after the unlinks');
  const reopened = Journal.open({ dir, segmentMaxBytes: 1024 });
  t.teardown(() => reopened.close());
  t.equal(reopened.backlog(), 0, 'nothing replayed');
});

t.test('a segment left behind by an interrupted delete is removed on open', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, segmentMaxBytes: 512 });
  for (let i = 1; i <= 10; i++) journal.append(record(i));
  const before = segmentFiles(dir);
  journal.ack(journal.pending(100).map((r) => r.call_id));
  await journal.close();
  const oldest = before[0]!;
  t.notOk(segmentFiles(dir).includes(oldest), 'deleted while acking');
  fs.writeFileSync(path.join(dir, oldest), JSON.stringify(record(1)) + '\n'); // as if the unlink never happened
  const reopened = Journal.open({ dir, segmentMaxBytes: 512 });
  t.teardown(() => reopened.close());
  t.same(reopened.pending(100), [], 'an acked record is not replayed');
  t.notOk(segmentFiles(dir).includes(oldest));
});

t.test('a lost or corrupt ack file replays everything still on disk', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  for (let i = 1; i <= 4; i++) journal.append(record(i));
  journal.pending(2);
  journal.ack([record(3).call_id]); // never handed out: ignored
  journal.ack([record(1).call_id]);
  await journal.close();
  fs.writeFileSync(path.join(dir, 'acks.json'), '{not json');
  const reopened = Journal.open({ dir });
  t.teardown(() => reopened.close());
  t.same(ids(reopened.pending(100)), [1, 2, 3, 4], 're-shipped; control dedupes by call_id');
});

t.test('records in several processes replay in append order', async (t) => {
  const dir = tempDir(t);
  for (let run = 0; run < 3; run++) {
    const j = Journal.open({ dir });
    for (let i = 1; i <= 3; i++) j.append(record(run * 3 + i));
    await j.close();
  }
  const j = Journal.open({ dir });
  t.teardown(() => j.close());
  t.same(ids(j.pending(100)), range(1, 9));
  t.equal(segmentFiles(dir).length, 4, 'one segment per process, plus the new active one');
});

t.test('fsync on every append (interval 0) still appends and replays', async (t) => {
  const dir = tempDir(t);
  const j = Journal.open({ dir, fsyncIntervalMs: 0 });
  for (let i = 1; i <= 3; i++) j.append(record(i));
  await j.close();
  const again = Journal.open({ dir });
  t.teardown(() => again.close());
  t.same(ids(again.pending(10)), [1, 2, 3]);
});

t.test('journal files are private to the gateway user', async (t) => {
  const dir = tempDir(t);
  const j = Journal.open({ dir });
  j.append(record(1));
  j.pending(1);
  j.ack([record(1).call_id]);
  await j.close();
  for (const name of fs.readdirSync(dir)) {
    t.equal(fs.statSync(path.join(dir, name)).mode & 0o077, 0, `${name} is 0600`);
  }
});

t.test('close() resolves only after a background ack-state write already running has finished', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  for (let i = 1; i <= 5; i++) journal.append(record(i));
  journal.pending(5);
  // The background write of acks.json opens a temp file and ends by renaming it into place (or
  // removing it once overtaken). Count the writes begun and ended: when close() resolves, every
  // write begun has ended, so nothing of the journal touches its directory any more (a test
  // removing it, or a shutdown, would race with a temp file being created and removed).
  const fsp = fs.promises;
  const { open, rename, rm } = fsp;
  let begun = 0;
  let ended = 0;
  fsp.open = (...args: Parameters<typeof open>) => {
    begun++;
    return open.apply(fsp, args);
  };
  const ending =
    <A extends unknown[]>(fn: (...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      try {
        await fn.apply(fsp, args);
      } finally {
        ended++;
      }
    };
  fsp.rename = ending(rename);
  fsp.rm = ending(rm);
  t.teardown(() => Object.assign(fsp, { open, rename, rm }));
  // The ack moves the cursor and starts the background write of acks.json (temp file, fsync, rename).
  t.equal(journal.ack([record(1).call_id, record(2).call_id]), 2);
  t.equal(begun, 1, 'the ack began a background write');
  await journal.close();
  t.equal(ended, begun, 'every background write had ended when close() resolved');
  t.same(
    fs.readdirSync(dir).filter((f) => f.includes('.tmp')),
    [],
    'no temp file left',
  );
  await journal.idle();
  t.pass('idle() on a closed journal resolves');
  const reopened = Journal.open({ dir });
  t.same(ids(reopened.pending(10)), [3, 4, 5], 'the cursor stored at close holds');
  await reopened.close();
});
