// isoTime formats exactly like Date#toISOString, across second, day and year boundaries.
import t from 'tap';
import { isoTime } from '../../gateway/request/iso-time';

t.test('matches toISOString', async (t) => {
  const starts = [0, 999, 1000, 1_700_000_000_000, Date.UTC(2026, 11, 31, 23, 59, 59, 990), Date.UTC(2028, 1, 28, 23, 59, 59, 500)];
  let mismatches = 0;
  for (const start of starts) {
    for (let ms = start; ms < start + 2500; ms += 7) if (isoTime(ms) !== new Date(ms).toISOString()) mismatches++;
    // going back in time is formatted correctly too
    if (isoTime(start) !== new Date(start).toISOString()) mismatches++;
  }
  t.equal(mismatches, 0);
  t.equal(isoTime(1_700_000_000_123.9), '2023-11-14T22:13:20.123Z', 'fractions are dropped');
});
