/**
 * The outcome batch's fast path (`control/sync/outcome-batch.ts`, Ajv compiled from the zod
 * schema) must accept exactly what zod accepts: every field at and past its bounds, wrong
 * types, missing and extra fields, astral characters and lone surrogates against the length
 * limits (a code point is one or two UTF-16 units), dates and ids the patterns refuse, and
 * thousands of batches with random mutations combined. A refused batch answers zod's field
 * errors.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { OutcomeBatch, OUTCOMES, type OutcomeRecord } from '../../protocol/outcome';
import { SvcError } from '../../protocol/errors';
import { fastPathAccepts, parseOutcomeBatch } from '../../control/sync/outcome-batch';

const good = (): OutcomeRecord => ({
  call_id: randomUUID(),
  key_id: 'key_a',
  endpoint_id: 'weather',
  method: 'POST',
  status: 200,
  outcome: 'ok',
  latency_ms: 12,
  started_at: '2030-01-01T12:00:00.123Z',
  gateway_id: 'gw-1',
});

const ASTRAL = '\u{1F600}'; // two UTF-16 code units, one code point
const LONE = '\uD83D'; // a high surrogate with no low one after it
const str = (n: number, unit = 'a'): string => unit.repeat(n);

/** Values to try for each field: valid ones and the ways they go wrong. */
const VARIANTS: Record<string, unknown[]> = {
  call_id: [
    randomUUID(),
    randomUUID().toUpperCase(),
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '018f2a6e-1c2b-7def-8abc-0123456789ab',
    '018f2a6e-1c2b-9def-8abc-0123456789ab', // version 9
    '018f2a6e-1c2b-7def-cabc-0123456789ab', // variant c
    '{018f2a6e-1c2b-7def-8abc-0123456789ab}',
    '018f2a6e1c2b7def8abc0123456789ab',
    '018f2a6e-1c2b-7def-8abc-0123456789ab\n',
    '',
    7,
    null,
  ],
  key_id: [
    null,
    'k',
    str(64),
    str(65),
    str(64, ASTRAL),
    str(65, ASTRAL),
    str(64, LONE),
    str(65, LONE),
    str(63) + LONE + ASTRAL,
    '',
    1,
    false,
  ],
  endpoint_id: ['e', str(63), str(64), str(63, ASTRAL), str(64, ASTRAL), str(31, ASTRAL) + 'a', '', ASTRAL, LONE, null, ['e']],
  method: ['GET', str(16), str(17), str(16, ASTRAL), str(17, ASTRAL), str(8, ASTRAL), '', null],
  status: [100, 599, 99, 600, 200.5, -200, '200', null, 1e300],
  outcome: [...OUTCOMES, 'OK', 'refund', '', null, 0],
  latency_ms: [0, 1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, -1, 1.5, '12', null],
  started_at: [
    '2030-01-01T12:00:00Z',
    '2030-01-01T12:00:00.1Z',
    '2030-01-01T12:00:00.123456789Z',
    '2028-02-29T00:00:00Z',
    '2030-02-29T00:00:00Z',
    '2030-13-01T00:00:00Z',
    '2030-01-01T24:00:00Z',
    '2030-01-01T12:00:60Z',
    '2030-01-01T12:00:00',
    '2030-01-01T12:00:00+00:00',
    '2030-01-01t12:00:00Z',
    '2030-01-01 12:00:00Z',
    '2030-01-01T12:00Z',
    '2030-01-01',
    '',
    1_893_499_200_000,
    null,
  ],
  gateway_id: ['g', str(64), str(65), str(64, ASTRAL), str(65, ASTRAL), str(33, ASTRAL), '', null],
};
const TOP_GATEWAY = ['gw-1', str(64), str(65), str(64, ASTRAL), str(65, ASTRAL), str(65, LONE), '', null, 3];

const agree = (t: tap.Test, body: unknown, label: string): void => {
  const zod = OutcomeBatch.safeParse(body).success;
  const fast = fastPathAccepts(body);
  if (fast !== zod) t.fail(`${label}: the fast path says ${fast}, zod says ${zod}`, { body });
};

t.test('every field variant: the fast path and zod agree', async (t) => {
  let cases = 0;
  for (const [field, values] of Object.entries(VARIANTS)) {
    for (const value of values) {
      agree(t, { gateway_id: 'gw-1', records: [{ ...good(), [field]: value }] }, `${field} = ${JSON.stringify(value)}`);
      cases++;
    }
    const { [field]: _dropped, ...missing } = good() as unknown as Record<string, unknown>;
    agree(t, { gateway_id: 'gw-1', records: [missing] }, `${field} missing`);
    cases++;
  }
  for (const value of TOP_GATEWAY) {
    agree(t, { gateway_id: value, records: [good()] }, `batch gateway_id = ${JSON.stringify(value)}`);
    cases++;
  }
  const shapes: [string, unknown][] = [
    ['an extra record field', { gateway_id: 'g', records: [{ ...good(), extra: 1 }] }],
    ['an extra batch field', { gateway_id: 'g', records: [], extra: 1 }],
    ['no records', { gateway_id: 'g', records: [] }],
    ['records missing', { gateway_id: 'g' }],
    ['records not an array', { gateway_id: 'g', records: {} }],
    ['a record that is null', { gateway_id: 'g', records: [null] }],
    ['a record that is an array', { gateway_id: 'g', records: [[]] }],
    ['10,000 records', { gateway_id: 'g', records: Array.from({ length: 10_000 }, good) }],
    ['10,001 records', { gateway_id: 'g', records: Array.from({ length: 10_001 }, good) }],
    ['a string body', 'records'],
    ['null', null],
    ['an array body', [good()]],
  ];
  for (const [label, body] of shapes) {
    agree(t, body, label);
    cases++;
  }
  t.pass(`${cases} cases agree`);
  t.ok(fastPathAccepts({ gateway_id: 'g', records: [good(), good()] }), 'a good batch takes the fast path');
  t.ok(fastPathAccepts({ gateway_id: 'g', records: [{ ...good(), key_id: str(64, ASTRAL) }] }), 'lengths count code points');
  t.notOk(fastPathAccepts({ gateway_id: 'g', records: [{ ...good(), key_id: str(65, ASTRAL) }] }), 'one past the limit in code points');
});

t.test('random batches with mutations combined: the fast path and zod agree', async (t) => {
  let s = 1;
  const rand = (): number => (s = (Math.imul(s, 48_271) >>> 0) % 2_147_483_647) / 2_147_483_647;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const fields = Object.keys(VARIANTS);
  let accepted = 0;
  const rounds = 3_000;
  for (let i = 0; i < rounds; i++) {
    const records = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => {
      const r: Record<string, unknown> = { ...good() };
      for (let m = Math.floor(rand() * 3); m > 0; m--) r[pick(fields)] = pick(VARIANTS[pick(fields)]!);
      return r;
    });
    const body = { gateway_id: rand() < 0.9 ? 'gw-1' : pick(TOP_GATEWAY), records };
    agree(t, body, `random batch ${i}`);
    if (OutcomeBatch.safeParse(body).success) accepted++;
  }
  t.ok(accepted > rounds / 20 && accepted < rounds - rounds / 20, `both kinds were tried (${accepted} of ${rounds} valid)`);
});

t.test('a refused batch answers zod field errors; a valid one comes back as it is', async (t) => {
  const body = { gateway_id: 'gw-1', records: [good(), { ...good(), status: 600, latency_ms: -1 }] };
  const err = t.throws(() => parseOutcomeBatch(body)) as unknown as SvcError;
  t.ok(err instanceof SvcError);
  t.equal(err.code, 'svc_bad_request');
  t.match(err.message, /records\.1\.status: .*; records\.1\.latency_ms: /);
  const valid = { gateway_id: 'gw-1', records: [good()] };
  t.equal(parseOutcomeBatch(valid), valid, 'no copy of a valid batch is made');
});
