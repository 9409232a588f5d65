// bearerOf, the one reading of `Authorization: Bearer <token>` (gateway keys, admin, sync,
// metrics and operator tokens): its rule, and its fast path agreeing with the full pattern.
import t from 'tap';
import { bearerOf } from '../../protocol/bearer';

const PATTERN = /^Bearer +(\S+)[ \t]*$/i;

t.test('the rule', async (t) => {
  t.equal(bearerOf('Bearer svc_beta_abc'), 'svc_beta_abc');
  t.equal(bearerOf('bearer svc_beta_abc'), 'svc_beta_abc', 'the scheme in any case');
  t.equal(bearerOf('BEARER   svc_beta_abc'), 'svc_beta_abc', 'one or more spaces');
  t.equal(bearerOf('Bearer svc_beta_abc \t'), 'svc_beta_abc', 'trailing spaces and tabs');
  t.equal(bearerOf('Bearer\tsvc_beta_abc'), null, 'a tab is not a separator (RFC 6750: 1*SP)');
  t.equal(bearerOf('Bearer a b'), null, 'one token');
  t.equal(bearerOf('Basic dXNlcjpwYXNz'), null);
  t.equal(bearerOf('Bearer'), null);
  t.equal(bearerOf(undefined), null);
});

t.test('the fast path gives the pattern’s answer', async (t) => {
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
    'Bearer\ta',
    'Bearer a\t',
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
