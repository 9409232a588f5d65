/**
 * `svcctl gateways list` and `svcctl gateways weight ID N` in-process against an in-process
 * control with two hand-written gateways: the table and `--json` (the admin API's own shapes),
 * a weight that moves the shares, and the usage and not-found errors with their exit codes.
 */
import t from 'tap';
import { GatewayWeightChange, GatewaysView } from '../../protocol/gateways';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { keepRenewing, liveGateway } from '../fixtures/fake-gateway';

t.test('gateways list and weight', async (t) => {
  const control = await startTestControl(t);
  const cli = (...args: string[]) => runCli(args, { control });

  const empty = await cli('gateways', 'list');
  t.equal(empty.code, 0, empty.stderr);
  t.match(empty.stdout, /limits\.mode split/, 'names the mode');
  t.match(empty.stdout, /No gateway has connected yet/);

  const a = await liveGateway(t, control, 'gw-a');
  keepRenewing(t, control, a);
  const b = await liveGateway(t, control, 'gw-b');
  keepRenewing(t, control, b);
  await a.nextShare((s) => s.share === 0.5);

  const listed = await cli('gateways', 'list', '--json');
  t.equal(listed.code, 0, listed.stderr);
  const view = GatewaysView.parse(listed.json());
  t.equal(view.limits_mode, 'split');
  t.equal(view.lease_s, 30, 'the default sync.leaseS');
  t.match(view.gateways, [
    { id: 'gw-a', connected: true, live: true, weight: 1, share: 0.5, applied_version: Number },
    { id: 'gw-b', connected: true, live: true, weight: 1, share: 0.5 },
  ]);

  const table = await cli('gateways', 'list');
  t.equal(table.code, 0);
  t.match(table.stdout, /ID\s+CONNECTED\s+LIVE\s+WEIGHT\s+SHARE\s+APPLIED\s+ENGINE\s+LAST SEEN/, 'a table with the issue’s columns');
  t.match(table.stdout, /gw-a\s+yes\s+yes\s+1\s+50%/);

  const weighted = await cli('gateways', 'weight', 'gw-a', '2', '--json');
  t.equal(weighted.code, 0, weighted.stderr);
  const change = GatewayWeightChange.parse(weighted.json());
  t.match(change, { changed: true, gateway: { id: 'gw-a', weight: 2, share: 0.666666666 } });
  t.match(
    change.gateways.find((g) => g.id === 'gw-b'),
    { weight: 1, share: 0.333333333 },
  );
  t.equal((await b.nextShare((s) => s.share !== 0.5)).share, 0.333333333, 'the gateway was pushed its new share');

  const human = await cli('gateways', 'weight', 'gw-a', '2');
  t.equal(human.code, 0);
  t.match(human.stdout, /gw-a already weighs 2; nothing changed/);

  const unknown = await cli('gateways', 'weight', 'gw-nobody', '2');
  t.equal(unknown.code, 1, 'an unknown gateway is a failure');
  t.match(unknown.stderr, /no gateway gw-nobody/);
  for (const bad of ['0', '-1', 'two', '1001']) {
    const res = await cli('gateways', 'weight', 'gw-a', bad);
    t.equal(res.code, 2, `weight ${bad}: usage error`);
    t.match(res.stderr, /weight must be a number above 0/);
  }
});
