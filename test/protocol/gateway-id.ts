/** One gateway-id rule: what `gateway.id` and the sync stream accept, and the default a gateway takes from its host name. */
import t from 'tap';
import { groupWorkers, workerParents } from '../../protocol/gateways';
import { GatewayId, StreamQuery, defaultGatewayId, workerGatewayId, workerIdRoom } from '../../protocol/snapshot';

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

t.test('a worker of a gateway is <id>.<n>, itself a gateway id', async (t) => {
  t.equal(workerIdRoom(2), 62);
  t.equal(workerIdRoom(10), 61);
  t.equal(workerGatewayId('gw-1', 2, 2), 'gw-1.2');
  const long = defaultGatewayId('x'.repeat(200));
  for (const [n, of] of [
    [1, 2],
    [9, 9],
    [10, 16],
    [1024, 1024],
  ] as const) {
    const id = workerGatewayId(long, n, of);
    t.ok(GatewayId.safeParse(id).success, `${id.length} characters: a default id is cut to leave room for .${n}`);
    t.ok(id.endsWith(`.${n}`));
  }
});

t.test('which gateway a worker belongs to, read from the ids control knows', async (t) => {
  const parents = workerParents(['gw-1.1', 'gw-1.2', 'edge.1', 'eu.example.com', 'lone.2', 'lone.3', 'x', 'x.1', 'x.2', 'gw-1.01']);
  t.same(Object.fromEntries(parents), { 'gw-1.1': 'gw-1', 'gw-1.2': 'gw-1' }, 'only X.n with X.1 and a sibling, and no gateway X');
  const grouped = groupWorkers([{ id: 'a' }, { id: 'g.10' }, { id: 'g.2' }, { id: 'b' }, { id: 'g.1' }]);
  t.same(
    grouped.map((g) => [g.id, g.gateway]),
    [
      ['a', null],
      ['g.1', 'g'],
      ['g.2', 'g'],
      ['g.10', 'g'],
      ['b', null],
    ],
    'workers follow one another in index order, where the first of them was listed',
  );
});
