/**
 * Control divides key limits among the live gateways (`limits.mode` = `split`), against an
 * in-process control and hand-written gateways on `/_sync/v1/stream`: each gateway gets its own
 * `share` line (provisional on connect, then whenever the live set or a weight changes); a
 * gateway counts once it acked and for `sync.leaseS` after its last ack or renewal; leaving or
 * a lapsed lease hands its part to the others, and the admin API then shows the gateway's share
 * as 0; weights change the proportions; `per-gateway`
 * gives everyone 1; after a restart control still counts the gateways that held a share until
 * they reconnect or their lease lapses. The gateway side (buckets) is test/gateway/limiter.ts
 * and test/e2e/gateway-shares.ts.
 */
import t from 'tap';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { ack, dial, keepRenewing, liveGateway, type FakeGateway } from '../fixtures/fake-gateway';
import { forEachStore, testDatabaseUrl } from '../fixtures/stores';

const LEASE_S = 1;

async function gateways(control: TestControl) {
  const res = await control.admin('GET', '/_admin/v1/gateways');
  return res.body as {
    limits_mode: string;
    lease_s: number;
    gateways: { id: string; connected: boolean; live: boolean; weight: number; share: number | null }[];
  };
}

const split = { 'sync.leaseS': LEASE_S };

forEachStore(t, (t, kind) => {
  t.test('each gateway gets its own share: provisional on connect, re-divided when another joins', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: split });
    const a = await liveGateway(t, control, 'gw-a');
    t.same(await a.nextShare(), { type: 'share', share: 1, gateways: 1, mode: 'split' }, 'the first gateway holds the whole limit');
    keepRenewing(t, control, a);

    const b = await dial(t, control, 'gw-b');
    t.same(
      await b.nextShare(),
      { type: 'share', share: 0.5, gateways: 2, mode: 'split' },
      'a joining gateway gets its part at once, before it acks',
    );
    t.equal(a.shares.length, 1, 'the others keep theirs until it acks');
    const snap = await b.snapshot;
    t.equal(await ack(control, { gateway_id: 'gw-b', version: snap.version, sha256: snap.sha256, ok: true }), 200);
    t.same(
      await a.nextShare(),
      { type: 'share', share: 0.5, gateways: 2, mode: 'split' },
      'once it acked, the first gateway gets its halved share',
    );
    keepRenewing(t, control, b);

    const view = await gateways(control);
    t.equal(view.limits_mode, 'split');
    t.equal(view.lease_s, LEASE_S);
    t.match(view.gateways, [
      { id: 'gw-a', connected: true, live: true, weight: 1, share: 0.5 },
      { id: 'gw-b', connected: true, live: true, weight: 1, share: 0.5 },
    ]);

    const c = await liveGateway(t, control, 'gw-c');
    keepRenewing(t, control, c);
    const third = 0.333333333;
    await a.nextShare((s) => s.share === third && s.gateways === 3);
    await b.nextShare((s) => s.share === third && s.gateways === 3);
    t.equal((await c.nextShare()).share, third, 'three gateways: a third each (rounded down, so they never sum past 1)');
  });

  t.test('weights change the proportions; weighting an unknown gateway is 404', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: split });
    const a = await liveGateway(t, control, 'gw-a');
    keepRenewing(t, control, a);
    const b = await liveGateway(t, control, 'gw-b');
    keepRenewing(t, control, b);
    await a.nextShare((s) => s.share === 0.5);

    const res = await control.admin('PUT', '/_admin/v1/gateways/gw-a/weight', { weight: 3 });
    t.equal(res.status, 200);
    t.match(res.body, { changed: true, limits_mode: 'split', gateway: { id: 'gw-a', weight: 3, share: 0.75 } });
    t.match(res.body.gateways, [
      { id: 'gw-a', share: 0.75 },
      { id: 'gw-b', weight: 1, share: 0.25 },
    ]);
    t.equal((await a.nextShare((s) => s.share !== 0.5)).share, 0.75, 'gw-a is pushed 3/4');
    t.equal((await b.nextShare((s) => s.share !== 0.5)).share, 0.25, 'gw-b is pushed 1/4');

    const again = await control.admin('PUT', '/_admin/v1/gateways/gw-a/weight', { weight: 3 });
    t.match(again.body, { changed: false, gateway: { weight: 3 } }, 'the same weight again changes nothing');

    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.ok(
      (audit.body.entries as { action: string; target: string }[]).some((e) => e.action === 'gateways.weight' && e.target === 'gw-a'),
      'the change is audited',
    );

    const unknown = await control.admin('PUT', '/_admin/v1/gateways/gw-nobody/weight', { weight: 2 });
    t.equal(unknown.status, 404);
    t.equal(unknown.body.code, 'svc_not_found');
    for (const weight of [0, -1, 1001, 'heavy']) {
      const bad = await control.admin('PUT', '/_admin/v1/gateways/gw-a/weight', { weight });
      t.equal(bad.status, 400, `weight ${JSON.stringify(weight)} is refused`);
      t.equal(bad.body.code, 'svc_bad_request');
    }
  });

  t.test('a gateway that leaves, or stops renewing its lease, hands its part to the others', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: split });
    const a = await liveGateway(t, control, 'gw-a');
    keepRenewing(t, control, a);
    const b = await liveGateway(t, control, 'gw-b');
    const renewB = keepRenewing(t, control, b);
    const c = await liveGateway(t, control, 'gw-c');
    keepRenewing(t, control, c);
    await a.nextShare((s) => s.gateways === 3);

    // gw-b stays connected but goes silent: once its lease lapses it no longer counts.
    renewB.stop();
    const afterLapse = await a.nextShare((s) => s.gateways === 2);
    t.equal(afterLapse.share, 0.5, 'after the lease lapsed, the two that renew share the limit');
    t.equal((await c.nextShare((s) => s.gateways === 2)).share, 0.5);
    const view = await gateways(control);
    t.match(
      view.gateways.find((g) => g.id === 'gw-b'),
      { connected: true, live: false, share: 0 },
      'the silent gateway is connected, not live, and holds no share once its lease lapsed',
    );

    // gw-c leaves: gw-a alone holds the whole limit.
    await c.close();
    t.same(
      await a.nextShare((s) => s.gateways === 1),
      { type: 'share', share: 1, gateways: 1, mode: 'split' },
      'after a leave the rest re-divide',
    );
  });

  t.test('a gone gateway is shown its last share while its lease holds, and 0 once it lapsed', async (t) => {
    // Before: a dead gateway kept showing its last share (25 %) beside the live ones (33.33 %).
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, flags: { 'sync.leaseS': 30 }, now: clock.now });
    const gws = [];
    for (const id of ['gw-a', 'gw-b', 'gw-c', 'gw-d']) gws.push(await liveGateway(t, control, id));
    const [a, b, c, d] = gws as [FakeGateway, FakeGateway, FakeGateway, FakeGateway];
    await a.nextShare((s) => s.gateways === 4);
    await b.nextShare((s) => s.gateways === 4);
    await c.nextShare((s) => s.gateways === 4);

    await d.close();
    await a.nextShare((s) => s.gateways === 3);
    const renew = async (...live: FakeGateway[]) => {
      for (const gw of live) t.equal(await ack(control, { gateway_id: gw.id, version: 0, ok: true, renew: true }), 200);
    };
    const shares = async () =>
      Object.fromEntries((await gateways(control)).gateways.map((g) => [g.id, { connected: g.connected, live: g.live, share: g.share }]));
    t.same(
      (await shares())['gw-d'],
      { connected: false, live: false, share: 0.25 },
      'just gone, within its lease: the share it may still enforce, cut off',
    );

    // Its lease lapses; the others renew theirs.
    clock.advance(30_001);
    await renew(a, b, c);
    const third = 0.333333333;
    t.same(
      await shares(),
      {
        'gw-a': { connected: true, live: true, share: third },
        'gw-b': { connected: true, live: true, share: third },
        'gw-c': { connected: true, live: true, share: third },
        'gw-d': { connected: false, live: false, share: 0 },
      },
      'the dead gateway holds 0 beside the live ones',
    );
    const cli = await runCli(['gateways', 'list'], { control });
    t.equal(cli.code, 0, cli.stderr);
    t.match(cli.stdout, /gw-d\s+no\s+no\s+1\s+0%/, 'svcctl gateways list shows 0 %');
    t.match(cli.stdout, /gw-a\s+yes\s+yes\s+1\s+33\.33%/);
  });

  t.test('per-gateway mode: every gateway enforces the whole limit', async (t) => {
    const control = await startTestControl(t, { store: kind, flags: { ...split, 'limits.mode': 'per-gateway' } });
    const a = await liveGateway(t, control, 'gw-a');
    keepRenewing(t, control, a);
    const b = await liveGateway(t, control, 'gw-b');
    keepRenewing(t, control, b);
    t.same(b.shares, [{ type: 'share', share: 1, gateways: 2, mode: 'per-gateway' }]);
    t.same(
      a.shares.map((s) => s.share),
      [1],
      'the first is never cut down',
    );
    t.equal((await gateways(control)).limits_mode, 'per-gateway');
  });

  t.test('after a restart, control counts the gateways that held a share until they reconnect or their lease lapses', async (t) => {
    const dataDir = t.testdir();
    const databaseUrl = await testDatabaseUrl(t, kind);
    const first = await startTestControl(t, { dataDir, flags: { databaseUrl, 'sync.leaseS': 30 } });
    const a = await liveGateway(t, first, 'gw-a');
    const b = await liveGateway(t, first, 'gw-b');
    await a.nextShare((s) => s.share === 0.5);
    await a.close();
    await b.close();
    await first.close();

    const second = await startTestControl(t, { dataDir, flags: { databaseUrl, 'sync.leaseS': 30 } });
    const back = await dial(t, second, 'gw-a');
    t.equal((await back.nextShare()).share, 0.5, 'the first to reconnect does not get the whole limit: gw-b still enforces its half');
  });
});
