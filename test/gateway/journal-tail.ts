// The journal's write gathering (appendThen), its in-memory tail for shipping, and the ack
// cursor stored off the event loop.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { JOURNAL_TAIL_RECORDS, Journal } from '../../gateway/journal/journal';
import type { OutcomeRecord } from '../../protocol/outcome';
import { tempDir } from './fixtures/temp-dir.cts';
import { outcomeRecord as record } from './fixtures/outcomes.cts';
import { waitFor } from './fixtures/harness.cts';

const onDisk = (dir: string): number[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((line) => (JSON.parse(line) as OutcomeRecord).latency_ms);
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test('appendThen gathers one turn of records into one write, then calls back', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  const writes: number[] = [];
  const realWrite = fs.writeSync;
  fs.writeSync = ((...args: Parameters<typeof fs.writeSync>) => {
    writes.push(1);
    return realWrite(...args);
  }) as typeof fs.writeSync;
  t.teardown(() => void (fs.writeSync = realWrite));
  const called: (Error | null)[] = [];
  for (let i = 1; i <= 5; i++) journal.appendThen(record(i), (err) => called.push(err));
  t.same(onDisk(dir), [], 'nothing written during the turn');
  t.equal(called.length, 0, 'no callback before the write');
  await turn();
  await turn();
  t.same(onDisk(dir), [1, 2, 3, 4, 5]);
  t.same(called, [null, null, null, null, null]);
  t.equal(writes.length, 1, 'one write for the five records');
  t.equal(journal.backlog(), 5);
});

t.test('append writes what appendThen queued first, so the file keeps call order', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  const called: number[] = [];
  journal.appendThen(record(1), () => called.push(1));
  journal.appendThen(record(2), () => called.push(2));
  journal.append(record(3));
  t.same(called, [1, 2], 'the queued callbacks ran before append returned');
  t.same(onDisk(dir), [1, 2, 3]);
  t.same(
    journal.pendingLines(10).lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms),
    [1, 2, 3],
  );
});

t.test('a failed gathered write reaches every callback and leaves no partial line', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  journal.append(record(1));
  const realWrite = fs.writeSync;
  let calls = 0;
  fs.writeSync = ((fd: number, buffer: Buffer) => {
    if (calls++ > 0) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    return realWrite(fd, buffer, 0, 10); // a short write, then the disk fills up
  }) as unknown as typeof fs.writeSync;
  const errors: (Error | null)[] = [];
  journal.appendThen(record(2), (err) => errors.push(err));
  journal.appendThen(record(3), (err) => errors.push(err));
  await turn();
  fs.writeSync = realWrite;
  t.equal(errors.length, 2);
  t.ok(
    errors.every((e) => e !== null && /no space/.test(e.message)),
    'both calls see the failure',
  );
  journal.append(record(4));
  t.same(onDisk(dir), [1, 4], 'the torn write was cut away; later records are whole');
  t.equal(journal.backlog(), 2);
});

t.test('records beyond the in-memory tail are shipped from disk, in order, then acked away', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, segmentMaxBytes: 1024 * 1024 });
  const total = JOURNAL_TAIL_RECORDS + 1500;
  for (let i = 1; i <= total; i++) journal.append(record(i));
  const segmentsBefore = fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length;
  t.ok(segmentsBefore > 2, `${segmentsBefore} segments`);
  let next = 1;
  for (;;) {
    const { ids, lines } = journal.pendingLines(4000);
    if (ids.length === 0) break;
    const got = lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms);
    t.equal(got[0], next, `batch starts at ${next}`);
    t.same(
      got,
      Array.from({ length: got.length }, (_, i) => next + i),
      'contiguous',
    );
    next += got.length;
    journal.ack(ids);
  }
  t.equal(next, total + 1, 'every record was handed out once');
  t.equal(journal.backlog(), 0);
  await journal.idle(); // the unlinks run on the thread pool
  t.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length, 1, 'only the active segment remains');
  await journal.close();
  const reopened = Journal.open({ dir });
  t.teardown(() => reopened.close());
  t.equal(reopened.backlog(), 0);
  t.same(reopened.pendingLines(10).ids, []);
});

t.test('out-of-order acks inside the tail hold the cursor until the gap is acked', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  for (let i = 1; i <= 6; i++) journal.append(record(i));
  const { ids } = journal.pendingLines(6);
  journal.ack([ids[1]!, ids[2]!, ids[4]!]);
  t.same(journal.pendingLines(10).ids, [ids[0], ids[3], ids[5]]);
  await journal.close();
  const reopened = Journal.open({ dir });
  t.same(
    reopened.pending(10).map((r) => r.latency_ms),
    [1, 4, 6],
    'the acks beyond the cursor survived',
  );
  reopened.ack(reopened.pendingLines(10).ids);
  t.equal(reopened.backlog(), 0);
  await reopened.close();
});

t.test('the ack cursor is stored in the background, without close', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, fsyncIntervalMs: 60_000 });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 4; i++) journal.append(record(i));
  journal.ack(journal.pendingLines(3).ids);
  await waitFor(() => {
    try {
      const stored = JSON.parse(fs.readFileSync(path.join(dir, 'acks.json'), 'utf8')) as { offset: number };
      return stored.offset > 0;
    } catch {
      return false;
    }
  }, 'acks.json written');
  // The process "dies" here: a second journal on the same files sees only the unacked record.
  const afterCrash = Journal.open({ dir });
  t.same(
    afterCrash.pending(10).map((r) => r.latency_ms),
    [4],
  );
  t.equal(journal.stats().ackStateErrors, 0);
  await afterCrash.close();
});

const bodyOf = (records: OutcomeRecord[]): string => records.map((r) => JSON.stringify(r)).join(',');

t.test('pendingBatch: the oldest records as one comma-joined body, acked by position', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, segmentMaxBytes: 4096 });
  for (let i = 1; i <= 40; i++) journal.appendThen(record(i), () => {});
  journal.flush();
  for (let i = 41; i <= 100; i++) journal.append(record(i));
  const first = journal.pendingBatch(30)!;
  t.equal(first.count, 30);
  t.same(
    journal.batchIds(first),
    Array.from({ length: 30 }, (_, i) => record(i + 1).call_id),
    'batchIds: its call ids, in order',
  );
  t.equal(first.body.toString(), bodyOf(Array.from({ length: 30 }, (_, i) => record(i + 1))), 'records 1–30, in order, as written');
  t.same(
    JSON.parse(`[${first.body.toString()}]`),
    Array.from({ length: 30 }, (_, i) => record(i + 1)),
    'the body is a JSON array once bracketed',
  );
  t.equal(journal.ackBatch(first), 30);
  t.equal(journal.backlog(), 70);
  t.equal(journal.ackBatch(first), 0, 'a batch acked twice acks nothing the second time');
  const rest = journal.pendingBatch(1000)!;
  t.equal(rest.count, 70, 'spans several writes and segments');
  t.equal(rest.body.toString(), bodyOf(Array.from({ length: 70 }, (_, i) => record(i + 31))));
  t.equal(journal.ackBatch(rest), 70);
  t.equal(journal.backlog(), 0);
  t.equal(journal.pendingBatch(10), null, 'nothing left');
  await journal.idle();
  t.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length, 1, 'acked segments deleted');
  await journal.close();
  const reopened = Journal.open({ dir });
  t.equal(reopened.backlog(), 0, 'the cursor was stored');
  await reopened.close();
});

t.test('pendingBatch gives way to records on disk and to ids handed out by pendingLines', async (t) => {
  const dir = tempDir(t);
  const earlier = Journal.open({ dir });
  for (let i = 1; i <= 5; i++) earlier.append(record(i));
  await earlier.close();
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 6; i <= 10; i++) journal.append(record(i));
  t.equal(journal.pendingBatch(100), null, "an earlier process's records are still on disk");
  const old = journal.pendingLines(5);
  t.same(
    old.lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms),
    [1, 2, 3, 4, 5],
  );
  t.equal(journal.pendingBatch(100), null, 'ids are in flight on the other path');
  journal.ack(old.ids);
  const batch = journal.pendingBatch(100)!;
  t.equal(batch.body.toString(), bodyOf([6, 7, 8, 9, 10].map(record)));
  t.equal(journal.ackBatch(batch), 5);
  t.equal(journal.backlog(), 0);
});

t.test('a batch the cursor moved past acks nothing and loses nothing', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 6; i++) journal.append(record(i));
  const stale = journal.pendingBatch(3)!;
  const { ids } = journal.pendingLines(2);
  journal.ack(ids);
  t.same(journal.batchIds(stale), [], 'batchIds: none, as it no longer starts the tail');
  t.equal(journal.ackBatch(stale), 0, 'its first records were acked another way');
  t.equal(journal.backlog(), 4);
  t.same(
    journal.pendingLines(10).lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms),
    [3, 4, 5, 6],
  );
});

t.test('past the in-memory limit, the fast path waits until the older records left disk', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, segmentMaxBytes: 1024 * 1024 });
  t.teardown(() => journal.close());
  const total = JOURNAL_TAIL_RECORDS + 10;
  for (let i = 1; i <= total; i++) journal.append(record(i));
  t.equal(journal.pendingBatch(100), null, 'the first 10 are only on disk now');
  const old = journal.pendingLines(10);
  t.same(
    old.lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms),
    range(1, 10),
  );
  journal.ack(old.ids);
  let shipped = 0;
  for (let b = journal.pendingBatch(5000); b !== null; b = journal.pendingBatch(5000)) {
    t.equal(JSON.parse(`[${b.body.toString()}]`)[0].latency_ms, 11 + shipped, `batch at ${11 + shipped}`);
    shipped += journal.ackBatch(b);
  }
  t.equal(shipped, JOURNAL_TAIL_RECORDS);
  t.equal(journal.backlog(), 0);
});

t.test('a throwing callback does not strand the other calls of the same write', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  const released: number[] = [];
  journal.appendThen(record(1), () => released.push(1));
  journal.appendThen(record(2), () => {
    throw new Error('bug in a callback');
  });
  journal.appendThen(record(3), () => released.push(3));
  t.throws(() => journal.flush(), /bug in a callback/, 'the throw surfaces');
  t.same(released, [1, 3], 'after every other call was released');
  t.same(onDisk(dir), [1, 2, 3]);
});
