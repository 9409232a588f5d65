/**
 * The sync hub's ack batches (`control/sync/acks.ts`): the rows added in one event-loop turn are
 * written with one call, each caller answered once its batch is stored, a failed write fails
 * every caller of its batch with the same error, and rows added while a batch is being written
 * wait for it and go in the next one.
 */
import t from 'tap';
import { AckBatcher } from '../../control/sync/acks';
import type { GatewayAckRow } from '../../control/store/gateways';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test('the rows of one turn are one write; each caller settles after it', async (t) => {
  const writes: GatewayAckRow[][] = [];
  const batcher = new AckBatcher(async (rows) => void writes.push([...rows]));
  const settled: string[] = [];
  const added = ['gw-a', 'gw-b', 'gw-c'].map((id, i) =>
    batcher.add({ id, at: i, version: 7, sha256: null }).then(() => void settled.push(id)),
  );
  added.push(batcher.add({ id: 'gw-d', at: 3 }).then(() => void settled.push('gw-d')));
  t.same(writes, [], 'nothing is written before the turn ends');
  await Promise.all(added);
  t.equal(writes.length, 1, 'one write');
  t.same(
    writes[0]!.map((r) => r.id),
    ['gw-a', 'gw-b', 'gw-c', 'gw-d'],
    'holding every row, in order',
  );
  t.same(settled.sort(), ['gw-a', 'gw-b', 'gw-c', 'gw-d'], 'every caller is answered');

  await batcher.add({ id: 'gw-a', at: 9, version: 8, sha256: null });
  t.equal(writes.length, 2, 'a later turn is a write of its own');
});

t.test('a failed write fails every caller of that batch with its error, and the next batch is written', async (t) => {
  const failure = new Error('disk full');
  let fail = true;
  const writes: number[] = [];
  const batcher = new AckBatcher(async (rows) => {
    writes.push(rows.length);
    if (fail) throw failure;
  });
  const results = await Promise.allSettled([batcher.add({ id: 'gw-a', at: 1, version: 2 }), batcher.add({ id: 'gw-b', at: 1 })]);
  t.same(
    results.map((r) => (r.status === 'rejected' ? r.reason : r.status)),
    [failure, failure],
    'both callers get the write’s error',
  );
  fail = false;
  await batcher.add({ id: 'gw-a', at: 2, version: 2 });
  t.same(writes, [2, 1], 'the next turn writes again');
});

t.test('rows added while a batch is written wait for it and go together in the next', async (t) => {
  const writes: string[][] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const batcher = new AckBatcher(async (rows) => {
    writes.push(rows.map((r) => r.id));
    if (writes.length === 1) await held;
  });
  const first = batcher.add({ id: 'gw-a', at: 1 });
  await nextTurn();
  t.same(writes, [['gw-a']], 'the first batch is being written');
  const later = [batcher.add({ id: 'gw-b', at: 2 }), batcher.add({ id: 'gw-c', at: 2 })];
  await nextTurn();
  await nextTurn();
  t.same(writes, [['gw-a']], 'no second write while the first is under way');
  release();
  await first;
  await Promise.all(later);
  t.same(writes, [['gw-a'], ['gw-b', 'gw-c']], 'the waiting rows are one write after it');
});
