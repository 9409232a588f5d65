// The journal's write gathering (appendThen), its in-memory tail for shipping, and the ack
// cursor stored off the event loop.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { JOURNAL_TAIL_RECORDS, Journal } from '../../gateway/journal';
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
  t.same(journal.pendingLines(10).lines.map((l) => (JSON.parse(l) as OutcomeRecord).latency_ms), [1, 2, 3]);
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
  t.ok(errors.every((e) => e !== null && /no space/.test(e.message)), 'both calls see the failure');
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
    t.same(got, Array.from({ length: got.length }, (_, i) => next + i), 'contiguous');
    next += got.length;
    journal.ack(ids);
  }
  t.equal(next, total + 1, 'every record was handed out once');
  t.equal(journal.backlog(), 0);
  t.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).length, 1, 'only the active segment remains');
  journal.close();
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
  journal.close();
  const reopened = Journal.open({ dir });
  t.same(reopened.pending(10).map((r) => r.latency_ms), [1, 4, 6], 'the acks beyond the cursor survived');
  reopened.ack(reopened.pendingLines(10).ids);
  t.equal(reopened.backlog(), 0);
  reopened.close();
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
  t.same(afterCrash.pending(10).map((r) => r.latency_ms), [4]);
  t.equal(journal.stats().ackStateErrors, 0);
  afterCrash.close();
});
