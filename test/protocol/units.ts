/** Durations (`2h`) and rate limits (`60/min`) as the CLI and admin API read them. */
import t from 'tap';
import { formatRateLimit, parseDuration, parseRateLimit } from '../../protocol/units';

t.test('parseDuration', async (t) => {
  const cases: [string, number | null][] = [
    ['90s', 90],
    ['1s', 1],
    ['59s', 59],
    ['1m', 60],
    ['15m', 900],
    ['90m', 5400],
    ['1h', 3600],
    ['1d', 86_400],
    ['2h', 7200],
    ['30d', 2_592_000],
    ['1w', 604_800],
    [' 2h ', 7200],
    ['2 h', 7200],
    ['0s', null],
    ['0h', null],
    ['-1h', null],
    ['1.5h', null],
    ['2', null],
    ['h', null],
    ['', null],
    ['2x', null],
    ['2hours', null],
    ['2h30m', null],
    ['99999999999999999999d', null],
  ];
  for (const [text, seconds] of cases) t.equal(parseDuration(text), seconds, `${JSON.stringify(text)} → ${seconds}`);
});

t.test('parseRateLimit', async (t) => {
  const cases: [string, { count: number; window_seconds: number } | null][] = [
    ['60/min', { count: 60, window_seconds: 60 }],
    ['600/min', { count: 600, window_seconds: 60 }],
    ['10/s', { count: 10, window_seconds: 1 }],
    ['1/sec', { count: 1, window_seconds: 1 }],
    ['1/second', { count: 1, window_seconds: 1 }],
    ['5/m', { count: 5, window_seconds: 60 }],
    ['5/minute', { count: 5, window_seconds: 60 }],
    ['1000/hour', { count: 1000, window_seconds: 3600 }],
    ['7/h', { count: 7, window_seconds: 3600 }],
    ['5/day', { count: 5, window_seconds: 86_400 }],
    [' 600 / MIN ', { count: 600, window_seconds: 60 }],
    ['10/parsec', null],
    ['0/min', null],
    ['-1/min', null],
    ['1.5/min', null],
    ['min', null],
    ['60', null],
    ['/min', null],
    ['60/', null],
    ['60/min/s', null],
    ['', null],
  ];
  for (const [text, limit] of cases) t.same(parseRateLimit(text), limit, `${JSON.stringify(text)} → ${JSON.stringify(limit)}`);
});

t.test('rate limits round-trip through formatting and parsing', async (t) => {
  for (const limit of [
    { count: 60, window_seconds: 60 },
    { count: 10, window_seconds: 1 },
    { count: 1000, window_seconds: 3600 },
    { count: 3, window_seconds: 86_400 },
  ]) {
    t.same(parseRateLimit(formatRateLimit(limit)), limit, formatRateLimit(limit));
  }
  t.equal(formatRateLimit({ count: 60, window_seconds: 60 }), '60/min');
});
