// pendingLines(): the shipper's unparsed path must hand out exactly what pending() would,
// as the records' own JSON, and acking its ids must advance the journal the same way.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { Journal } from '../../gateway/journal/journal';
import type { OutcomeRecord } from '../../protocol/outcome';
import { tempDir } from './fixtures/temp-dir.cts';

function record(n: number): OutcomeRecord {
  return {
    call_id: `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    key_id: n % 2 === 0 ? null : `key_${n}`,
    endpoint_id: 'ep',
    method: 'POST',
    status: 200,
    outcome: 'ok',
    latency_ms: n,
    started_at: new Date(1_700_000_000_000 + n).toISOString(),
    gateway_id: 'gw',
  };
}

t.test('pendingLines equals pending, as JSON lines, and acks advance the cursor', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, fsyncIntervalMs: 0 });
  for (let i = 0; i < 25; i++) journal.append(record(i));
  const { ids, lines } = journal.pendingLines(10);
  t.same(
    ids,
    Array.from({ length: 10 }, (_, i) => record(i).call_id),
  );
  t.same(
    lines.map((l) => JSON.parse(l)),
    Array.from({ length: 10 }, (_, i) => record(i)),
  );
  t.equal(journal.ack(ids), 10);
  t.equal(journal.backlog(), 15);
  t.same(
    journal.pendingLines(100).ids,
    Array.from({ length: 15 }, (_, i) => record(i + 10).call_id),
  );
  await journal.close();
  const reopened = Journal.open({ dir, fsyncIntervalMs: 0 });
  t.equal(reopened.backlog(), 15, 'the ack cursor survived a reopen');
  await reopened.close();
});

t.test('a line whose id is not in the usual place is still found by parsing it', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir, fsyncIntervalMs: 0 });
  journal.append(record(1));
  await journal.close();
  const segment = fs.readdirSync(dir).find((f) => f.endsWith('.jsonl') && fs.statSync(path.join(dir, f)).size > 0)!;
  const { call_id, ...rest } = record(2);
  fs.appendFileSync(path.join(dir, segment), JSON.stringify({ ...rest, call_id }) + '\n');
  const reopened = Journal.open({ dir, fsyncIntervalMs: 0 });
  t.same(reopened.pendingLines(10).ids, [record(1).call_id, record(2).call_id]);
  await reopened.close();
});
