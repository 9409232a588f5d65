/**
 * What one change costs control with many gateways (docs/scaling.md, "What breaks first"),
 * against an in-process control and hand-written gateways: the acks that arrive in one
 * event-loop turn are stored with one store call (`gateways.ackedMany`), each answered after
 * it and `--wait` released by them; and gateways that need a full snapshot of the same
 * version at the same time share one build, each receiving lines whose digest matches.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import type { GatewayAckRow } from '../../control/store/gateways';
import type { Store } from '../../control/store';
import { startTestControl, type TestControl } from '../fixtures/control';
import { dial, spySnapshotBuilds, type FakeGateway } from '../fixtures/fake-gateway';
import { forEachStore } from '../fixtures/stores';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The gateway family's methods, each bound to it, as an object whose methods a test may replace. */
function gatewayMethods(store: Store): Store['gateways'] {
  const real = store.gateways;
  const out: Record<string, unknown> = {};
  for (let o: object | null = real; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = (real as unknown as Record<string, unknown>)[name];
      if (name !== 'constructor' && typeof value === 'function' && !(name in out)) out[name] = value.bind(real);
    }
  }
  return out as unknown as Store['gateways'];
}

/** Count the gateway family's writes: `ackedMany` batches and single `acked` / `seen` calls. */
function spyGatewayWrites(store: Store): { batches: GatewayAckRow[][]; singles: string[] } {
  const spied = { batches: [] as GatewayAckRow[][], singles: [] as string[] };
  const real = gatewayMethods(store);
  (store as { gateways: Store['gateways'] }).gateways = {
    ...real,
    ackedMany: (rows) => {
      spied.batches.push([...rows]);
      return real.ackedMany(rows);
    },
    acked: (...args) => {
      spied.singles.push(`acked ${args[0]}`);
      return real.acked(...args);
    },
    seen: (...args) => {
      spied.singles.push(`seen ${args[0]}`);
      return real.seen(...args);
    },
  };
  return spied;
}

/** `POST /_sync/v1/ack` on a keep-alive connection of its own per gateway, so several can be sent in one go. */
function acker(t: Test, control: TestControl): (body: Record<string, unknown>) => Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  return (body) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        control.urls.control + '/_sync/v1/ack',
        { method: 'POST', agent, headers: { authorization: `Bearer ${control.syncToken}`, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
}

async function issue(control: TestControl): Promise<{ id: string; version: number }> {
  const res = await control.admin('POST', '/_admin/v1/keys', {});
  if (res.status !== 201) throw new Error(`issue answered ${res.status}`);
  return res.body;
}

forEachStore(t, (t, kind) => {
  t.test('the acks of several gateways in one turn are one store call, each answered after it, and release --wait', async (t) => {
    const control = await startTestControl(t, { store: kind });
    await issue(control);
    const ids = ['gw-1', 'gw-2', 'gw-3', 'gw-4'];
    const gateways: FakeGateway[] = await Promise.all(ids.map((id) => dial(t, control, id)));
    const snaps = await Promise.all(gateways.map((gw) => gw.snapshot));
    const version = snaps[0]!.version;
    const posts = ids.map(() => acker(t, control));
    // Open each gateway's connection (a lease renewal) first, so the acks below go out at once.
    for (const [i, id] of ids.entries()) t.equal(await posts[i]!({ gateway_id: id, version: 0, ok: true, renew: true }), 200);
    await nextTurn();
    const pending = await control.admin('POST', '/_admin/v1/sync/wait', { version, timeout_ms: 100 });
    t.match(pending.body, { complete: false, gateways: 4 }, 'before the acks, --wait is incomplete');
    t.same([...pending.body.pending].sort(), ids);

    const writes = spyGatewayWrites(control.handle.ctx.store);
    const waited = control.admin('POST', '/_admin/v1/sync/wait', { version, timeout_ms: 10_000 });
    const answers = ids.map((id, i) => posts[i]!({ gateway_id: id, version, sha256: snaps[i]!.sha256, ok: true }));
    t.same(await Promise.all(answers), [200, 200, 200, 200], 'every ack is answered');
    t.same(writes.singles, [], 'no ack is written alone');
    t.equal(writes.batches.length, 1, 'one store call for the acks of the turn');
    t.same(
      writes.batches[0]?.map((r) => [r.id, r.version, r.sha256]).sort(),
      ids.map((id, i) => [id, version, snaps[i]!.sha256]),
      'holding every gateway’s ack',
    );
    t.match((await waited).body, { complete: true, pending: [], gateways: 4 }, 'the --wait under way completes');
    const status = await control.admin('GET', '/_admin/v1/gateways');
    t.same(
      (status.body.gateways as { id: string; applied_version: number }[]).map((g) => [g.id, g.applied_version]),
      ids.map((id) => [id, version]),
      'every gateway applied the version',
    );
    const stored = await control.handle.ctx.store.gateways.list();
    t.same(
      stored.map((g) => [g.id, g.applied_version, g.applied_sha256]),
      ids.map((id, i) => [id, version, snaps[i]!.sha256]),
      'and the store holds every ack',
    );
  });

  t.test('a failed batch write fails every ack of the batch; nothing counts as applied', async (t) => {
    const control = await startTestControl(t, { store: kind });
    await issue(control);
    const ids = ['gw-x', 'gw-y'];
    const gateways = await Promise.all(ids.map((id) => dial(t, control, id)));
    const snaps = await Promise.all(gateways.map((gw) => gw.snapshot));
    const posts = ids.map(() => acker(t, control));
    for (const [i, id] of ids.entries()) t.equal(await posts[i]!({ gateway_id: id, version: 0, ok: true, renew: true }), 200);
    await nextTurn();
    const store = control.handle.ctx.store;
    const real = store.gateways;
    let calls = 0;
    (store as { gateways: Store['gateways'] }).gateways = {
      ...gatewayMethods(store),
      ackedMany: () => {
        calls++;
        return Promise.reject(new Error('the disk is full'));
      },
    };
    const answers = await Promise.all(
      ids.map((id, i) => posts[i]!({ gateway_id: id, version: snaps[i]!.version, sha256: snaps[i]!.sha256, ok: true })),
    );
    (store as { gateways: Store['gateways'] }).gateways = real;
    t.equal(calls, 1, 'one write for both');
    t.same(answers, [500, 500], 'both acks fail, as one failed write did before');
    const wait = await control.admin('POST', '/_admin/v1/sync/wait', { version: snaps[0]!.version, timeout_ms: 100 });
    t.match(wait.body, { complete: false }, '--wait does not count an ack that was not stored');
    t.same([...wait.body.pending].sort(), ids);
  });

  t.test('fresh gateways dialling while a full snapshot is built share it: one build, the same digest for all', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const keys = [await issue(control), await issue(control), await issue(control)];
    const version = keys.at(-1)!.version;
    const builds = spySnapshotBuilds(control.handle.ctx.store);
    const ids = ['gw-a', 'gw-b', 'gw-c', 'gw-d', 'gw-e'];
    // Each dial answers once control wrote the stream's headers, after it asked for the snapshot.
    const gateways = [];
    for (const id of ids) gateways.push(await dial(t, control, id));
    builds.release();
    const snaps = await Promise.all(gateways.map((gw) => gw.snapshot));
    t.equal(builds.builds(), 1, 'one snapshot built for five gateways');
    for (const [i, snap] of snaps.entries()) {
      t.equal(snap.version, version, `${ids[i]} got the current version`);
      t.equal(snap.computed, snap.sha256, `${ids[i]}: the digest of the lines it received matches the end line`);
      t.equal(snap.sha256, snaps[0]!.sha256, `${ids[i]}: the same snapshot as the first`);
    }

    // Once they all have it, it is dropped: a later gateway, after a change, gets a new build.
    const later = await issue(control);
    const fresh = await dial(t, control, 'gw-later');
    const snap = await fresh.snapshot;
    t.equal(builds.builds(), 2, 'a new version is a new build');
    t.equal(snap.version, later.version);
    t.equal(snap.computed, snap.sha256);
  });
});
