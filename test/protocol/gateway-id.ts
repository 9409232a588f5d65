/** One gateway-id rule: what `gateway.id` and the sync stream accept, and the default a gateway takes from its host name. */
import t from 'tap';
import { GatewayId, StreamQuery, defaultGatewayId } from '../../protocol/snapshot';

t.test('a gateway id is 1 to 64 of A-Z a-z 0-9 . _ -', async (t) => {
  for (const ok of ['gw-1', 'a', 'GW_2.eu-west', 'x'.repeat(64)]) t.ok(GatewayId.safeParse(ok).success, JSON.stringify(ok));
  for (const bad of ['', 'has space', 'gw/1', 'gw:1', 'é', 'x'.repeat(65)]) t.notOk(GatewayId.safeParse(bad).success, JSON.stringify(bad));
  t.notOk(StreamQuery.safeParse({ gateway_id: 'has space' }).success, 'the sync stream takes the same rule');
});

t.test('the default id is gw- and the host name, made valid', async (t) => {
  t.equal(defaultGatewayId('web-1.example.com'), 'gw-web-1.example.com');
  t.equal(defaultGatewayId('My Host/2'), 'gw-My-Host-2', 'other characters become -');
  t.equal(defaultGatewayId('x'.repeat(200)), `gw-${'x'.repeat(60)}`, 'cut to 60 characters of the host');
  for (const host of ['', 'ü', 'a b c', 'x'.repeat(200), '::1'])
    t.ok(GatewayId.safeParse(defaultGatewayId(host)).success, `valid for ${JSON.stringify(host)}`);
});
