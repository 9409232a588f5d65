// The outcome shipper against a control that refuses some records: good records still reach
// control exactly once, refused ones are set aside in rejected.jsonl, nothing blocks or is lost.
// With several controls, a batch the current one never acked goes to the next once it is current.
// Whoever waits on records reaching control hears each committed batch's call ids with control's
// answer, and each record set aside with none.
import t from 'tap';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Journal, REJECTED_FILE } from '../../gateway/journal/journal';
import { OutcomeShipper, type AckListener } from '../../gateway/journal/shipper';
import { silentLogger } from '../../runtime/log';
import { ControlEndpoints } from '../../gateway/control-link/sync-http';
import type { OutcomeAck, OutcomeRecord } from '../../protocol/outcome';
import { listen, waitFor } from './fixtures/harness.cts';
import { tempDir } from './fixtures/temp-dir.cts';
import { outcomeRecord as record } from './fixtures/outcomes.cts';

const POISON = 999_999;

/** A running shipper for `journal` (as gw-1, to `controlUrl`), stopped in teardown; counts its failures and refused records. */
function startShipper(t: Parameters<typeof listen>[0], journal: Journal, controlUrl: string | ControlEndpoints, onAcked?: AckListener) {
  const counts = { failures: 0, rejected: 0 };
  const shipper = new OutcomeShipper({
    controlUrl,
    syncToken: 'token',
    gatewayId: 'gw-1',
    journal,
    log: silentLogger,
    onFailure: () => counts.failures++,
    onRejected: () => counts.rejected++,
    ...(onAcked !== undefined ? { onAcked } : {}),
  });
  t.teardown(() => shipper.stop());
  shipper.start();
  return counts;
}

/** A control that answers 400 to a batch that is not JSON or holds a record with latency POISON. */
async function fakeControl(t: Parameters<typeof listen>[0]) {
  const stored = new Map<string, number>();
  let posts = 0;
  let commits = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts++;
      let batch: { records: OutcomeRecord[] };
      try {
        batch = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: OutcomeRecord[] };
      } catch {
        res.writeHead(400, { 'content-type': 'application/problem+json' }).end('{"code":"svc_bad_request","detail":"body is not JSON"}');
        return;
      }
      if (batch.records.some((r) => r.latency_ms === POISON)) {
        res
          .writeHead(400, { 'content-type': 'application/problem+json' })
          .end('{"code":"svc_bad_request","detail":"records.0.latency_ms: too slow to be true"}');
        return;
      }
      for (const r of batch.records) stored.set(r.call_id, (stored.get(r.call_id) ?? 0) + 1);
      const ack: OutcomeAck = { accepted: batch.records.length, duplicates: 0, ingest_seq: ++commits, ingest_instance: 'ctl-test' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ack));
    });
  });
  const port = await listen(t, server);
  return { url: `http://127.0.0.1:${port}`, stored, posts: () => posts };
}

t.test('refused records are isolated and set aside; every other record arrives once', async (t) => {
  const control = await fakeControl(t);
  const dir = tempDir(t);
  // An earlier process left records on disk, and a damaged line whose id is still readable.
  const earlier = Journal.open({ dir });
  for (let i = 1; i <= 40; i++) earlier.append(record(i));
  await earlier.close();
  const segment = fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl') && fs.statSync(path.join(dir, f)).size > 0)[0]!;
  fs.appendFileSync(path.join(dir, segment), '{"call_id":"0190a1b2-c3d4-7e5f-8a6b-000000009999","status":2,}\n');

  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  const wanted = new Set<string>();
  for (let i = 1; i <= 40; i++) wanted.add(record(i).call_id);
  for (let i = 41; i <= 1200; i++) {
    const r = i === 500 || i === 1111 ? { ...record(i), latency_ms: POISON } : record(i);
    journal.append(r);
    if (r.latency_ms !== POISON) wanted.add(r.call_id);
  }
  const shipped = startShipper(t, journal, control.url);
  await waitFor(() => journal.backlog() === 0, 'journal drained', 30_000);

  t.equal(control.stored.size, wanted.size, `${wanted.size} records stored`);
  t.ok(
    [...wanted].every((id) => control.stored.get(id) === 1),
    'each good record exactly once',
  );
  t.equal(shipped.rejected, 3, 'the damaged line and the two refused records');
  const aside = fs
    .readFileSync(path.join(dir, REJECTED_FILE), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { call_id: string; reason: string; line: string });
  t.same(aside.map((a) => a.call_id).sort(), [record(500).call_id, record(1111).call_id, '0190a1b2-c3d4-7e5f-8a6b-000000009999'].sort());
  t.ok(
    aside.every((a) => /400/.test(a.reason)),
    "control's answer is kept as the reason",
  );
  t.ok(
    aside.some((a) => a.line.endsWith('"status":2,}')),
    'the damaged line is kept as it was',
  );
  t.equal(journal.stats().rejected, 3);
  t.ok(control.posts() < 200, `isolation took ${control.posts()} posts, not one per record`);

  // The journal moved past them: a restart ships nothing again.
  await journal.close();
  const again = Journal.open({ dir });
  t.equal(again.backlog(), 0);
  await again.close();
});

t.test('a control that is down is retried; nothing is set aside', async (t) => {
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 5; i++) journal.append(record(i));
  const down = http.createServer((_req, res) => res.writeHead(503).end());
  const port = await listen(t, down);
  const shipped = startShipper(t, journal, `http://127.0.0.1:${port}`);
  await waitFor(() => shipped.failures >= 2, 'two failed attempts');
  t.equal(shipped.rejected, 0);
  t.equal(journal.backlog(), 5, 'everything still waits in the journal');
  t.notOk(fs.existsSync(path.join(dir, REJECTED_FILE)));
});

t.test('a refused batch from memory falls back to narrowing by id, then ships from memory again', async (t) => {
  const control = await fakeControl(t);
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 100; i++) journal.append(i === 50 ? { ...record(i), latency_ms: POISON } : record(i));
  t.ok(journal.pendingBatch(10) !== null, 'the records are shipped from memory to begin with');
  const shipped = startShipper(t, journal, control.url);
  await waitFor(() => journal.backlog() === 0, 'journal drained');
  t.equal(shipped.rejected, 1);
  t.equal(control.stored.size, 99);
  t.notOk(control.stored.has(record(50).call_id));
  for (let i = 101; i <= 110; i++) journal.append(record(i));
  t.ok(journal.pendingBatch(100) !== null, 'back on the fast path once nothing is in flight by id');
  await waitFor(() => journal.backlog() === 0, 'later records drained');
  t.equal(control.stored.size, 109);
});

t.test(
  'the listener hears the ids of each committed batch with the answer, a record set aside with none, and nothing while it does not wait',
  async (t) => {
    const control = await fakeControl(t);
    const dir = tempDir(t);
    const journal = Journal.open({ dir });
    t.teardown(() => journal.close());
    const heard = new Map<string, (OutcomeAck | null)[]>();
    const listener = {
      waits: true,
      acked(ids: readonly string[], ack: OutcomeAck | null) {
        for (const id of ids) heard.set(id, [...(heard.get(id) ?? []), ack]);
      },
    };
    // Record 50 refused: the first batch from memory is refused, narrowed by id, then memory again.
    for (let i = 1; i <= 100; i++) journal.append(i === 50 ? { ...record(i), latency_ms: POISON } : record(i));
    startShipper(t, journal, control.url, listener);
    await waitFor(() => journal.backlog() === 0, 'journal drained');
    t.equal(heard.size, 100, 'every record heard of');
    t.same(heard.get(record(50).call_id), [null], 'the record set aside: with no answer');
    const good = [...heard.entries()].filter(([id]) => id !== record(50).call_id);
    t.ok(
      good.every(([id, acks]) => acks.length === 1 && control.stored.get(id) === 1 && acks[0]?.ingest_instance === 'ctl-test'),
      "each other one once, with control's answer",
    );
    t.ok(
      good.some(([, acks]) => acks[0]!.ingest_seq! > 1),
      'answers of later batches carry their own numbers',
    );

    for (let i = 101; i <= 110; i++) journal.append(record(i));
    t.ok(journal.pendingBatch(100) !== null, 'these from memory');
    await waitFor(() => journal.backlog() === 0, 'later records drained');
    t.same(
      Array.from({ length: 10 }, (_, i) => heard.get(record(101 + i).call_id)?.length),
      Array.from({ length: 10 }, () => 1),
      'a batch from memory: its ids read from the bytes',
    );
    listener.waits = false;
    for (let i = 111; i <= 120; i++) journal.append(record(i));
    await waitFor(() => journal.backlog() === 0, 'the last records drained');
    t.equal(control.stored.size, 119);
    t.equal(heard.size, 110, 'not waiting: no ids read');
  },
);

t.test('a batch a control took but never acked is resent to the next control once the gateway moves there', async (t) => {
  let taken = 0;
  // Reads the batch and goes away without answering, as a control killed mid-request does.
  const dying = http.createServer((req) => {
    req.resume();
    req.on('end', () => {
      taken++;
      req.socket.destroy();
    });
  });
  const dyingUrl = `http://127.0.0.1:${await listen(t, dying)}`;
  const next = await fakeControl(t);
  const endpoints = new ControlEndpoints([dyingUrl, next.url]);
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 30; i++) journal.append(record(i));
  const shipped = startShipper(t, journal, endpoints);
  await waitFor(() => shipped.failures >= 1, 'a batch lost with its control');
  t.ok(taken >= 1, 'the first control took the batch');
  t.equal(journal.backlog(), 30, 'nothing acked');
  // What the sync client reports when the stream to that control ends.
  endpoints.failed(dyingUrl, 'sync stream ended');
  await waitFor(() => journal.backlog() === 0, 'the journal drained to the next control');
  t.equal(next.stored.size, 30, 'every record reached the next control');
  t.ok(
    [...next.stored.values()].every((n) => n === 1),
    'each once',
  );
  t.equal(shipped.rejected, 0);
});

t.test('a batch on the wire to a control that hangs is sent to the next control as soon as the gateway moves', async (t) => {
  let taken = 0;
  // Reads the batch and never answers, as a stopped control does (its kernel still takes the bytes).
  const hung = http.createServer((req) => {
    req.resume();
    req.on('end', () => taken++);
  });
  const hungUrl = `http://127.0.0.1:${await listen(t, hung)}`;
  const next = await fakeControl(t);
  const endpoints = new ControlEndpoints([hungUrl, next.url]);
  const dir = tempDir(t);
  const journal = Journal.open({ dir });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 30; i++) journal.append(record(i));
  const shipped = startShipper(t, journal, endpoints);
  await waitFor(() => taken === 1, 'the hung control to take the batch');
  t.equal(journal.backlog(), 30, 'nothing acked');
  // The sync client gives up on the silent stream; the shipper must not wait out its 30 s timeout.
  endpoints.failed(hungUrl, 'no word from control for 6000 ms');
  await waitFor(() => journal.backlog() === 0, 'the journal drained to the next control', 5_000);
  t.equal(next.stored.size, 30, 'every record reached the next control');
  t.equal(shipped.failures, 1, 'the batch left on the hung control counted as one failure');
  t.equal(taken, 1, 'nothing more went to the hung control');
});

t.test('drain at shutdown waits for the batch on the wire, then ships the records written after it', async (t) => {
  // A control that holds its answer to the first batch until released.
  const stored = new Set<string>();
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  let posts = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const first = ++posts === 1;
      void (first ? held : Promise.resolve()).then(() => {
        const batch = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: OutcomeRecord[] };
        for (const r of batch.records) stored.add(r.call_id);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: batch.records.length, duplicates: 0 }));
      });
    });
  });
  const port = await listen(t, server);
  const journal = Journal.open({ dir: tempDir(t) });
  t.teardown(() => journal.close());
  for (let i = 1; i <= 3; i++) journal.append(record(i));
  const shipper = new OutcomeShipper({
    controlUrl: `http://127.0.0.1:${port}`,
    syncToken: 'token',
    gatewayId: 'gw-1',
    journal,
    log: silentLogger,
  });
  t.teardown(() => shipper.stop());
  shipper.start();
  await waitFor(() => posts === 1, 'the first batch on the wire');
  for (let i = 4; i <= 5; i++) journal.append(record(i));
  const drained = shipper.drain();
  release();
  await drained;
  t.equal(journal.backlog(), 0, 'nothing left in the journal');
  t.same([...stored].sort(), [1, 2, 3, 4, 5].map((i) => record(i).call_id).sort(), 'the batch on the wire and the later records');
  t.equal(posts, 2, 'two batches, one after the other');
});
