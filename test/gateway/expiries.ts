/**
 * The coverage's heap of expiries (gateway/state/expiries.ts): whatever the order of pushes and
 * pops, each pop is the soonest held, equal times included, with the item pushed with it.
 */
import t from 'tap';
import { Expiries } from '../../gateway/state/expiries';

t.test('pops come soonest first, against a sorted model', async (t) => {
  // A fixed sequence, so a failure names a case that can be run again.
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const heap = new Expiries<string>();
  t.equal(heap.next, Infinity, 'empty: nothing is due');
  const model: { at: number; item: string }[] = [];
  const wrong: string[] = [];
  for (let step = 0; step < 20_000; step++) {
    if (model.length === 0 || random(3) > 0) {
      const at = random(500);
      heap.push(at, `${at}/${step}`);
      model.push({ at, item: `${at}/${step}` });
    } else {
      const soonest = Math.min(...model.map((m) => m.at));
      const popped = heap.pop();
      const i = model.findIndex((m) => m.item === popped.item);
      if (popped.at !== soonest || i === -1 || model[i]!.at !== popped.at)
        wrong.push(`step ${step}: ${JSON.stringify(popped)}, soonest ${soonest}`);
      if (i !== -1) model.splice(i, 1);
    }
    if (heap.size !== model.length || heap.next !== (model.length === 0 ? Infinity : Math.min(...model.map((m) => m.at))))
      wrong.push(`step ${step}: size ${heap.size}, next ${heap.next}`);
    if (wrong.length > 5) break;
  }
  t.same(wrong, []);
});
