/**
 * Control's beats (docs/design.md §4), against an in-process control and a hand-written gateway
 * on `/_sync/v1/stream`: the answer announces the beat interval (`X-Svc-Beat-Ms`), and a `beat`
 * line comes every interval, also while the stream waits on a full snapshot that is still being
 * read (so a gateway does not take a slow build for a hung control), and on an idle stream after it.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { SYNC_BEAT_HEADER, SYNC_BEAT_INTERVAL_MS, StreamLine } from '../../protocol/snapshot';
import { startTestControl, type TestControl } from '../fixtures/control';
import { waitFor } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';
import { spySnapshotBuilds } from '../fixtures/fake-gateway';

/** Longest wait for a beat: two intervals, for a busy machine; not a latency claim. */
const BEAT_LIMIT_MS = SYNC_BEAT_INTERVAL_MS * 2 + 1_000;

/** Open the stream as gateway `id` holding nothing; every line is kept, parsed against the wire schema. */
function dial(t: Test, control: TestControl, id: string): Promise<{ beatHeader: unknown; lines: StreamLine[] }> {
  const url = new URL('/_sync/v1/stream', control.urls.control);
  url.searchParams.set('gateway_id', id);
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${control.syncToken}` }, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      const lines: StreamLine[] = [];
      createInterface({ input: res }).on('line', (line) => lines.push(StreamLine.parse(JSON.parse(line))));
      res.on('error', () => undefined);
      t.teardown(() => {
        res.destroy();
        req.destroy();
      });
      resolve({ beatHeader: res.headers[SYNC_BEAT_HEADER], lines });
    });
  });
}

forEachStore(t, (t, kind) => {
  t.test('the stream announces its beat and beats while a snapshot is read and once it is idle', async (t) => {
    const control = await startTestControl(t, { store: kind });
    t.equal((await control.admin('POST', '/_admin/v1/keys', {})).status, 201);
    const release = spySnapshotBuilds(control.handle.ctx.store).release;
    const gw = await dial(t, control, 'gw-1');
    t.equal(gw.beatHeader, String(SYNC_BEAT_INTERVAL_MS), 'the answer announces the beat interval');
    await waitFor(() => gw.lines.some((l) => l.type === 'beat'), 'a beat while the snapshot is held', BEAT_LIMIT_MS);
    t.notOk(
      gw.lines.some((l) => l.type === 'snapshot_begin'),
      'it came before any line of the snapshot, whose build is still held',
    );
    release();
    await waitFor(() => gw.lines.some((l) => l.type === 'snapshot_end'), 'the snapshot');
    const after = gw.lines.length;
    await waitFor(() => gw.lines.slice(after).some((l) => l.type === 'beat'), 'a beat on the idle stream', BEAT_LIMIT_MS);
  });
});
