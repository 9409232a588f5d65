// UUIDv7 call ids: layout (RFC 9562 §5.7), the timestamp round-trips, ids are unique and sort by time.
import t from 'tap';
import { uuidv7 } from '../../gateway/request/uuid';

const LAYOUT = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const millisOf = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

t.test('version 7, RFC variant, lowercase hex', async (t) => {
  for (let i = 0; i < 2000; i++) {
    const id = uuidv7();
    if (!LAYOUT.test(id)) t.fail(`bad layout: ${id}`);
  }
  t.pass('2000 ids checked');
});

t.test('the first 48 bits are the given Unix milliseconds', async (t) => {
  for (const ms of [0, 1, 0xffff, 0x10000, 1_700_000_000_123, Date.now(), 2 ** 48 - 1]) {
    t.equal(millisOf(uuidv7(ms)), ms, `${ms}`);
  }
});

t.test('ids are unique and sort by time across milliseconds', async (t) => {
  const seen = new Set<string>();
  const start = 1_750_000_000_000;
  const ids: string[] = [];
  for (let i = 0; i < 100_000; i++) {
    const id = uuidv7(start + Math.floor(i / 10));
    seen.add(id);
    ids.push(id);
  }
  t.equal(seen.size, 100_000, 'no repeats (random bits from a refilled pool)');
  const earlier = ids.filter((_, i) => i % 10 === 0);
  t.same([...earlier].sort(), earlier, 'lexical order follows the time prefix');
});

t.test('each call returns its own string', async (t) => {
  const a = uuidv7(1);
  const b = uuidv7(2);
  t.not(a, b);
  t.equal(millisOf(a), 1, 'an earlier id is not changed by a later call');
});
