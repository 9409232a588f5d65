// The journal tail's block layout, checked directly against a model: writes staged and
// committed into small blocks, across segment changes, with multi-byte text, a write larger
// than a block, failed (uncommitted) writes, eviction past `max`, and drops of every size.
import t, { type Test } from 'tap';
import { RecordTail, SPARE_BLOCKS, type Position } from '../../gateway/journal/journal-tail';
import { outcomeRecord } from './fixtures/outcomes.cts';

interface ModelLine {
  text: string;
  start: Position;
  end: Position;
}

/** A segment writer that feeds the tail like the journal does, and keeps the model. */
function writer(t: Test, tail: RecordTail) {
  const model: ModelLine[] = [];
  const disk: Buffer[] = [];
  let seq = 1;
  let offset = 0;
  return {
    model,
    disk,
    /** Stage and commit `lines` as one write; `fail` leaves it uncommitted, like a refused write. */
    write(lines: string[], fail = false): void {
      const text = lines.join('\n') + '\n';
      const bytes = tail.stage(text, seq, offset);
      t.equal(bytes, Buffer.byteLength(text), 'stage returns the UTF-8 length');
      const staged = tail.stagedData.subarray(tail.stagedAt, tail.stagedAt + bytes);
      t.equal(staged.toString('utf8'), text, 'the staged bytes are the text');
      if (fail) return;
      disk.push(Buffer.from(staged));
      tail.commit(lines, bytes === text.length);
      for (const line of lines) {
        const end = offset + Buffer.byteLength(line) + 1;
        model.push({ text: line, start: { seq, offset }, end: { seq, offset: end } });
        offset = end;
      }
    },
    /** The next write goes to a new segment. */
    rotate(): void {
      seq++;
      offset = 0;
    },
  };
}

function check(t: Test, tail: RecordTail, live: ModelLine[]): void {
  t.equal(tail.size, live.length, 'size');
  if (live.length === 0) {
    t.equal(tail.start(), null, 'nothing live: no start');
    t.equal(tail.batch(10), null, 'nothing live: no batch');
    return;
  }
  t.same(tail.start(), live[0]!.start, 'start is the first live line');
  t.same(tail.firstEnd(), live[0]!.end, 'firstEnd');
  const first = JSON.parse(live[0]!.text) as { call_id?: string };
  t.equal(tail.firstId(), first.call_id ?? null, 'firstId');
  t.same(
    tail.firstIds(live.length + 1),
    live.map((l) => (JSON.parse(l.text) as { call_id?: string }).call_id ?? null),
    'firstIds: every live line, in order',
  );
  t.same(
    tail.firstIds(2),
    live.slice(0, 2).map((l) => (JSON.parse(l.text) as { call_id?: string }).call_id ?? null),
    'firstIds(2)',
  );
  const seen: string[] = [];
  tail.forEachLine((line) => (seen.push(line), true));
  t.same(
    seen,
    live.map((l) => l.text),
    'forEachLine gives every live line in order',
  );
  for (const limit of [1, 3, live.length, live.length + 5]) {
    const batch = tail.batch(limit)!;
    const taken = live.slice(0, limit);
    t.equal(batch.count, taken.length, `batch(${limit}) count`);
    t.equal(batch.body.toString('utf8'), taken.map((l) => l.text).join(','), `batch(${limit}) body`);
    t.same(batch.start, taken[0]!.start, `batch(${limit}) start`);
    t.same(batch.end, taken.at(-1)!.end, `batch(${limit}) end`);
  }
}

const line = (n: number, note = ''): string => JSON.stringify({ ...outcomeRecord(n), ...(note ? { note } : {}) });

t.test('small blocks: lines across blocks and segments stay in order with exact positions', async (t) => {
  const tail = new RecordTail(10_000, 300);
  const w = writer(t, tail);
  let n = 0;
  for (let i = 0; i < 40; i++) {
    if (i === 17 || i === 29) w.rotate();
    const count = 1 + (i % 3);
    const lines = Array.from({ length: count }, () => line(++n, n % 5 === 0 ? 'ünïcødé ✓ 🚀' : ''));
    w.write(lines, i % 11 === 5); // every so often a write is refused and never committed
  }
  w.write(Array.from({ length: 6 }, () => line(++n, 'x'.repeat(200)))); // larger than a block
  check(t, tail, w.model);

  let live = [...w.model];
  for (const n of [1, 2, 5, 7, 13]) {
    tail.drop(n);
    live = live.slice(n);
    check(t, tail, live);
  }
  tail.drop(live.length);
  check(t, tail, []);

  w.write([line(1000), line(1001)]);
  check(t, tail, w.model.slice(-2));
});

t.test('past max the oldest records are let go', async (t) => {
  const tail = new RecordTail(10, 256);
  const w = writer(t, tail);
  for (let n = 1; n <= 25; n++) w.write([line(n)]);
  check(t, tail, w.model.slice(-10));
  w.write(Array.from({ length: 12 }, (_, i) => line(100 + i)));
  check(t, tail, w.model.slice(-10));
});

t.test('a tail that holds nothing still stages writes', async (t) => {
  const tail = new RecordTail(0, 256);
  const w = writer(t, tail);
  for (let n = 1; n <= 5; n++) w.write([line(n)]);
  check(t, tail, []);
});

t.test('a batch framed by head and end is the whole document, built in memory the tail reuses', async (t) => {
  const tail = new RecordTail(10_000, 300);
  const w = writer(t, tail);
  for (let n = 1; n <= 12; n++) w.write([line(n, n % 4 === 0 ? 'ünïcødé' : '')]);
  const head = Buffer.from('{"gateway_id":"gw-1","records":[');
  const end = Buffer.from(']}');
  const first = tail.batch(12, head, end)!;
  const doc = JSON.parse(first.body.toString('utf8')) as { gateway_id: string; records: unknown[] };
  t.equal(doc.gateway_id, 'gw-1', 'the head is in front');
  t.same(
    doc.records,
    w.model.map((l) => JSON.parse(l.text)),
    'the records in order, comma-joined, closed by the end',
  );
  const copy = Buffer.from(first.body);
  const second = tail.batch(5, head, end)!;
  t.equal(second.body.buffer, first.body.buffer, 'a smaller batch is built in the same memory');
  t.equal(JSON.parse(second.body.toString('utf8')).records.length, 5, 'and holds its own records');
  t.not(first.body.toString('utf8'), copy.toString('utf8'), 'so a batch is only valid until the next one');
  t.equal(
    tail.batch(2)!.body.toString('utf8'),
    w.model
      .slice(0, 2)
      .map((l) => l.text)
      .join(','),
    'no frame: the records alone',
  );
});

t.test('blocks let go are reused for new lines without stale bytes showing through', async (t) => {
  const tail = new RecordTail(10_000, 2048);
  const w = writer(t, tail);
  let n = 0;
  // Rounds of writes that fill several blocks, then an ack of everything but the newest line:
  // from the second round on, new blocks come from the ones let go.
  for (let round = 0; round < 6; round++) {
    const from = w.model.length;
    for (let i = 0; i < 9; i++) w.write([line(++n, round % 2 === 0 ? 'x'.repeat(40) : '')]);
    check(t, tail, w.model.slice(from - (round === 0 ? 0 : 1)));
    tail.drop(tail.size - 1);
    check(t, tail, w.model.slice(-1));
  }
  const inner = tail as unknown as { blocks: { data: Buffer }[]; spare: { data: Buffer }[] };
  t.ok(
    inner.spare.length > 0 && inner.spare.length <= SPARE_BLOCKS,
    `spare blocks are kept, at most ${SPARE_BLOCKS} (${inner.spare.length})`,
  );
  const before = new Set([...inner.blocks, ...inner.spare].map((b) => b.data));
  for (let i = 0; i < 6; i++) w.write([line(++n)]);
  t.ok(
    inner.blocks.every((b) => before.has(b.data)),
    'new lines went into memory the tail already had',
  );
  check(t, tail, w.model.slice(-7));
});
