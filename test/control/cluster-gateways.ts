/**
 * Gateways of several controls on one PostgreSQL database, against two in-process controls and
 * hand-written gateways (test/fixtures/fake-gateway.ts): each gateway is attached to the control
 * serving its stream (`gateways[].control_id` through either control); split-limit shares are
 * divided over the live gateways of the whole cluster, not per control; a `--wait` through one
 * control waits for the gateways attached to the other; a gateway leaving one control hands its
 * part back on both. The real-process side is test/e2e/control-cluster.ts.
 *
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t from 'tap';
import { join } from 'node:path';
import { startTestControl, type TestControl } from '../fixtures/control';
import { ack, keepRenewing, liveGateway } from '../fixtures/fake-gateway';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { waitFor } from '../fixtures/stack';

const LEASE_S = 1;

interface Row {
  id: string;
  connected: boolean;
  live: boolean;
  share: number | null;
  applied_version: number;
  control_id: string | null;
}

async function gatewaysOf(control: TestControl, token: string): Promise<Row[]> {
  const res = await control.admin('GET', '/_admin/v1/gateways', undefined, token);
  return (res.body as { gateways: Row[] }).gateways;
}

/** Poll `read` until `done` holds (the other control hears of a change by a notification). */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  const found = await waitFor(
    async () => {
      last = await read();
      return done(last) ? { value: last } : null;
    },
    what,
    8_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; last ${JSON.stringify(last)}`);
  });
  return found.value;
}

if (!skipWithoutPostgres(t)) {
  t.test('two controls: one division of the limits, cluster-wide --wait, each gateway shown where it is attached', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const flags = { databaseUrl, 'sync.leaseS': LEASE_S, 'limits.mode': 'split' };
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags });
    const joined = await startTestControl(t, { dataDir: join(root, 'b'), flags });
    // The later control accepts the first one's tokens (test/control/cluster-tokens.ts).
    const second: TestControl = { ...joined, syncToken: first.syncToken, adminToken: first.adminToken };
    const token = first.adminToken;
    const [idA, idB] = [first.handle.ctx.controlId, second.handle.ctx.controlId];

    const a = await liveGateway(t, first, 'gw-a');
    keepRenewing(t, first, a);
    t.same(
      await a.nextShare(),
      { type: 'share', share: 1, gateways: 1, mode: 'split' },
      'alone in the cluster, gw-a holds the whole limit',
    );

    const b = await liveGateway(t, second, 'gw-b');
    keepRenewing(t, second, b);
    t.match(await b.nextShare(), { share: 0.5, gateways: 2 }, "gw-b's provisional share on the second control counts gw-a on the first");
    t.match(
      await a.nextShare((s) => s.share === 0.5),
      { share: 0.5, gateways: 2 },
      'the first control halves the share of its gateway once the one on the second control acked',
    );

    for (const [name, control] of [
      ['first', first],
      ['second', second],
    ] as const) {
      const rows = await until(
        () => gatewaysOf(control, token),
        (rows) => rows.length === 2 && rows.every((r) => r.live),
        `both gateways live through the ${name} control`,
      );
      t.match(
        rows,
        [
          { id: 'gw-a', connected: true, live: true, control_id: idA, share: 0.5 },
          { id: 'gw-b', connected: true, live: true, control_id: idB, share: 0.5 },
        ],
        `through the ${name} control: each gateway attached to its own control, half the limit each`,
      );
    }
    const status = await first.admin('GET', '/_admin/v1/status', undefined, token);
    t.match(
      status.body.gateways.map((g: Row) => [g.id, g.control_id]),
      [
        ['gw-a', idA],
        ['gw-b', idB],
      ],
      '`svcctl status` shows which control each gateway is attached to',
    );

    // A change made through the first control: its --wait waits for gw-b, on the second.
    const change = await first.admin('PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true, note: 'cluster wait' }, token);
    t.match(change.body, { changed: true });
    const version = change.body.version as number;
    const deltaA = await a.nextDelta(version);
    t.equal(await ack(first, { gateway_id: 'gw-a', version, sha256: deltaA.sha256, ok: true }), 200);
    const early = await first.admin('POST', '/_admin/v1/sync/wait', { version, timeout_ms: 300 }, token);
    t.match(
      early.body,
      { complete: false, gateways: 2, pending: ['gw-b'] },
      'the wait counts the gateway of the other control, which has not acked',
    );

    const waited = first.admin('POST', '/_admin/v1/sync/wait', { version, timeout_ms: 8_000 }, token);
    const deltaB = await b.nextDelta(version);
    t.equal(await ack(second, { gateway_id: 'gw-b', version, sha256: deltaB.sha256, ok: true }), 200, 'gw-b acks on the second control');
    t.match((await waited).body, { complete: true, gateways: 2, pending: [] }, 'its ack there completes the wait on the first');

    // gw-b leaves the second control: the first hands its part back to gw-a.
    await b.close();
    t.same(
      await a.nextShare((s) => s.share === 1),
      { type: 'share', share: 1, gateways: 1, mode: 'split' },
      'gw-a gets the whole limit back',
    );
    const after = await until(
      () => gatewaysOf(first, token),
      (rows) => rows.find((r) => r.id === 'gw-b')?.control_id === null,
      'gw-b detached',
    );
    t.match(after, [
      { id: 'gw-a', control_id: idA, live: true },
      { id: 'gw-b', control_id: null, connected: false, live: false },
    ]);
  });
}

if (!skipWithoutPostgres(t)) {
  t.test('changes through both controls at once: every delta a gateway gets moves it forward, and every ack of it is taken', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    const joined = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl } });
    const second: TestControl = { ...joined, syncToken: first.syncToken, adminToken: first.adminToken };
    const token = first.adminToken;
    // One gateway on each control, acking every delta it gets (as a gateway does).
    const gws = [
      [first, await liveGateway(t, first, 'gw-a')],
      [second, await liveGateway(t, second, 'gw-b')],
    ] as const;
    const refused: string[] = [];
    const acked = gws.map(() => 0);
    const acking = setInterval(() => {
      gws.forEach(([control, gw], i) => {
        for (; acked[i]! < gw.deltas.length; acked[i]!++) {
          const d = gw.deltas[acked[i]!]!;
          void ack(control, { gateway_id: gw.id, version: d.version, sha256: d.sha256, ok: true }).then((status) => {
            if (status !== 200) refused.push(`${gw.id} v${d.version}: ${status}`);
          });
        }
      });
    }, 5);
    t.teardown(() => clearInterval(acking));

    let last = 0;
    for (let round = 0; round < 40; round++) {
      const changes = await Promise.all(
        [first, second].map((control, i) =>
          control.admin('POST', '/_admin/v1/endpoints', { id: `ep-${round}-${i}`, upstream: 'http://127.0.0.1:9/' }, token),
        ),
      );
      for (const c of changes) t.equal(c.status, 201, `round ${round}: the change is made`);
      last = Math.max(last, ...changes.map((c) => c.body.version as number));
    }
    const waited = await first.admin('POST', '/_admin/v1/sync/wait', { version: last, timeout_ms: 8_000 }, token);
    t.match(waited.body, { complete: true, gateways: 2 }, 'both gateways apply the last change');
    for (const [, gw] of gws) {
      const backwards = gw.deltas.filter((d) => d.version <= d.base);
      t.same(backwards, [], `${gw.id}: no delta that is not after its base (${gw.deltas.length} deltas)`);
      const versions = gw.deltas.map((d) => d.version);
      t.same(
        versions,
        [...versions].sort((x, y) => x - y),
        `${gw.id}: the versions it gets only grow`,
      );
    }
    t.same(refused, [], 'no ack is refused (no digest overwritten by a repeated version)');
    const rows = await gatewaysOf(first, token);
    t.same(
      rows.map((r) => r.applied_version),
      [last, last],
      'both stored as applied at the last version',
    );
  });
}
