/**
 * Control's side of a nack (docs/design.md §4), against an in-process control and a hand-written
 * gateway on `/_sync/v1/stream`: a nacked version is recorded (status `last_nack`), is not
 * resent on the open stream nor on reconnect, `--wait` for it reports the gateway pending, and
 * the next state change goes out as a full snapshot. An ack whose digest differs from what was
 * sent counts as a nack.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { startTestControl, type TestControl } from '../fixtures/control';
import { waitFor } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';
import { SnapshotDigest, verifySealedLine } from '../../protocol/snapshot';

interface FakeGateway {
  /** Every line received but pings, beats, shares and coverage (with its ingested line), parsed. */
  lines: any[];
  /** The next such line (waits up to the limit). */
  next(limitMs?: number): Promise<any>;
  close: () => Promise<void>;
}

function dial(t: Test, control: TestControl, gatewayId: string, version = 0, epoch?: number): Promise<FakeGateway> {
  const url = new URL('/_sync/v1/stream', control.urls.control);
  url.searchParams.set('gateway_id', gatewayId);
  url.searchParams.set('version', String(version));
  if (epoch !== undefined) url.searchParams.set('epoch', String(epoch));
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${control.syncToken}` }, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      const lines: any[] = [];
      let cursor = 0;
      const reader = createInterface({ input: res });
      reader.on('line', (line) => {
        const parsed = JSON.parse(line);
        // shares: sync-shares.ts; coverage: coverage-allowance.ts, coverage-ingest-seq.ts
        if (['ping', 'beat', 'share', 'coverage', 'ingested'].includes(parsed.type)) return;
        parsed.raw = line;
        lines.push(parsed);
      });
      // Closing the stream from this side aborts the response: expected, not a failure.
      reader.on('error', () => undefined);
      res.on('error', () => undefined);
      req.on('error', () => undefined);
      const closed = new Promise<void>((r) => res.on('close', () => r()));
      const fake: FakeGateway = {
        lines,
        async next(limitMs = 5_000) {
          await waitFor(() => cursor < lines.length, 'the next line on the stream', limitMs);
          return lines[cursor++];
        },
        close: async () => {
          res.destroy();
          req.destroy();
          await closed;
        },
      };
      t.teardown(fake.close);
      resolve(fake);
    });
  });
}

/** Read a full snapshot from the stream; checks its digest; returns version, digest and key ids. */
async function readSnapshot(t: Test, gw: FakeGateway): Promise<{ version: number; sha256: string; epoch: number; keyIds: string[] }> {
  const begin = await gw.next();
  t.equal(begin.type, 'snapshot_begin', 'a full snapshot begins');
  const digest = new SnapshotDigest();
  digest.update(begin.raw);
  const keyIds: string[] = [];
  for (;;) {
    const line = await gw.next();
    if (line.type === 'keys') {
      digest.update(line.raw);
      keyIds.push(...line.keys.map((k: { id: string }) => k.id));
      continue;
    }
    t.equal(line.type, 'snapshot_end', 'and ends');
    t.equal(line.version, begin.version, 'at the version it began with');
    t.equal(line.sha256, digest.digest(), 'its digest matches the lines');
    return { version: line.version, sha256: line.sha256, epoch: begin.epoch, keyIds };
  }
}

async function ack(control: TestControl, body: Record<string, unknown>): Promise<number> {
  const res = await control.request(control.urls.control + '/_sync/v1/ack', {
    method: 'POST',
    headers: { authorization: `Bearer ${control.syncToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.status;
}

async function gatewayStatus(control: TestControl, id: string) {
  const status = await control.admin('GET', '/_admin/v1/status');
  return (status.body.gateways as { id: string; connected: boolean; applied_version: number; last_nack: string | null }[]).find(
    (g) => g.id === id,
  );
}

async function issue(control: TestControl): Promise<{ id: string; version: number }> {
  const res = await control.admin('POST', '/_admin/v1/keys', {});
  if (res.status !== 201) throw new Error(`issue answered ${res.status}`);
  return res.body;
}

forEachStore(t, (t, kind) => {
  t.test('a nacked snapshot is recorded, not resent, and superseded by a full snapshot', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const first = await issue(control);
    const gw = await dial(t, control, 'gw-fake');
    const snap = await readSnapshot(t, gw);
    t.equal(snap.version, first.version, 'the snapshot is at the current version');
    t.same(snap.keyIds, [first.id]);

    t.equal(
      await ack(control, { gateway_id: 'gw-fake', version: snap.version, ok: false, reason: 'refused by the test' }),
      200,
      'the nack is accepted',
    );
    const seen = await gatewayStatus(control, 'gw-fake');
    t.match(seen?.last_nack, new RegExp(`^v${snap.version} at .*: refused by the test$`), 'status shows the nack, its version and reason');
    t.equal(seen?.applied_version, 0, 'nothing counts as applied');
    t.equal(seen?.connected, true);

    const wait = await control.admin('POST', '/_admin/v1/sync/wait', { version: snap.version, timeout_ms: 200 });
    t.match(wait.body, { complete: false, pending: ['gw-fake'] }, '--wait reports the gateway that refused');

    // The nacked version is not resent on the open stream: the next line is the next change's
    // (refused too, so the gateway still holds nothing).
    const fence = await issue(control);
    const fenced = await readSnapshot(t, gw);
    t.equal(fenced.version, fence.version, 'the nacked version is not resent on the open stream');
    t.equal(await ack(control, { gateway_id: 'gw-fake', version: fenced.version, ok: false, reason: 'refused by the test' }), 200);

    await gw.close();
    const again = await dial(t, control, 'gw-fake');

    // Nothing is resent on reconnect: the first line the new stream carries is the next change's.
    const second = await issue(control);
    const next = await readSnapshot(t, again);
    t.equal(next.version, second.version, 'nor on reconnect: the first line is a full snapshot of the next change');
    t.same(next.keyIds.sort(), [first.id, fence.id, second.id].sort(), 'holding the whole state');
    t.equal(await ack(control, { gateway_id: 'gw-fake', version: next.version, sha256: next.sha256, ok: true }), 200);
    t.equal((await gatewayStatus(control, 'gw-fake'))?.applied_version, next.version, 'the ack moves the applied version');
    const done = await control.admin('POST', '/_admin/v1/sync/wait', { version: next.version, timeout_ms: 5_000 });
    t.match(done.body, { complete: true, pending: [] }, '--wait completes');
  });

  t.test('a nacked delta: nothing resent, the next change is a full snapshot', async (t) => {
    const control = await startTestControl(t, { store: kind });
    await issue(control);
    const gw = await dial(t, control, 'gw-delta');
    const snap = await readSnapshot(t, gw);
    t.equal(await ack(control, { gateway_id: 'gw-delta', version: snap.version, sha256: snap.sha256, ok: true }), 200);

    const second = await issue(control);
    const delta = await gw.next();
    t.match(delta, { type: 'delta', base: snap.version, version: second.version }, 'a change after an ack goes out as a delta');
    t.equal(verifySealedLine(delta.raw), delta.sha256, 'sealed');
    t.equal(await ack(control, { gateway_id: 'gw-delta', version: delta.version, ok: false, reason: 'delta refused' }), 200);
    t.match((await gatewayStatus(control, 'gw-delta'))?.last_nack, new RegExp(`^v${delta.version} .*delta refused`));
    t.equal((await gatewayStatus(control, 'gw-delta'))?.applied_version, snap.version, 'still at the snapshot version');
    // The nacked delta is not resent: the next line on the stream is the next change's.
    const third = await issue(control);
    const full = await readSnapshot(t, gw);
    t.equal(full.version, third.version, 'the next line is a full snapshot of the next change, not a delta on top of the refused one');
    t.equal(full.keyIds.length, 3);
    t.equal(await ack(control, { gateway_id: 'gw-delta', version: full.version, sha256: full.sha256, ok: true }), 200);
    t.equal((await gatewayStatus(control, 'gw-delta'))?.applied_version, full.version);
  });

  t.test('a gateway that reconnects after a nack, announcing the version it holds, gets a full snapshot on the next change', async (t) => {
    const control = await startTestControl(t, { store: kind });
    await issue(control);
    const gw = await dial(t, control, 'gw-back');
    const snap = await readSnapshot(t, gw);
    t.equal(await ack(control, { gateway_id: 'gw-back', version: snap.version, sha256: snap.sha256, ok: true }), 200);
    await issue(control);
    const delta = await gw.next();
    t.equal(delta.type, 'delta');
    t.equal(await ack(control, { gateway_id: 'gw-back', version: delta.version, ok: false, reason: 'state diverged' }), 200);
    await gw.close();

    // What a real gateway does: dial again announcing the version and epoch it still holds.
    const again = await dial(t, control, 'gw-back', snap.version, snap.epoch);
    // The nacked delta is not resent on reconnect: the first line of the new stream is the next change's.
    const third = await issue(control);
    const next = await again.next();
    t.equal(
      next.type,
      'snapshot_begin',
      'the first line is a full snapshot of the next change, not the nacked delta nor a delta on top of the state the gateway refused to build on',
    );
    t.equal(next.version, third.version);
  });

  t.test('an ack with a digest other than the one sent counts as a nack', async (t) => {
    const control = await startTestControl(t, { store: kind });
    await issue(control);
    const gw = await dial(t, control, 'gw-digest');
    const snap = await readSnapshot(t, gw);
    const wrong = snap.sha256.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    t.equal(await ack(control, { gateway_id: 'gw-digest', version: snap.version, sha256: wrong, ok: true }), 200);
    const seen = await gatewayStatus(control, 'gw-digest');
    t.equal(seen?.applied_version, 0, 'not applied');
    t.match(seen?.last_nack, /digest mismatch/, 'recorded as a nack');
    // Not resent: the next line on the stream is the next change's.
    const next = await issue(control);
    t.match(await gw.next(), { type: 'snapshot_begin', version: next.version }, 'and not resent');
  });
});
