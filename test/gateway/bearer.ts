// bearerOf: the fast path for `Bearer <token>` agrees with the full pattern on every input.
import t from 'tap';
import { bearerOf } from '../../gateway/request/handler';

const PATTERN = /^Bearer +(\S+) *$/i;

t.test('same answer as the pattern', async (t) => {
  const inputs = [
    'Bearer svc_beta_abc',
    'bearer svc_beta_abc',
    'BEARER  svc_beta_abc',
    'Bearer svc_beta_abc ',
    'Bearer ',
    'Bearer',
    'Bearer  ',
    'Bearer a b',
    'Bearer a\tb',
    'Bearer abc\u00a0',
    'Bearer ab\u00e9',
    'Bearer abc\r',
    'Basic dXNlcjpwYXNz',
    'Bearersvc_beta_abc',
    ' Bearer svc_beta_abc',
    'Bearer x',
  ];
  for (const input of inputs) t.equal(bearerOf(input), PATTERN.exec(input)?.[1] ?? null, JSON.stringify(input));
});
