/**
 * The error catalogue (docs/design.md §9): every code has a status, a title and a problem+json body
 * of one shape, and the catalogue is exactly the list the design names.
 */
import t from 'tap';
import {
  ERRORS,
  ERROR_CODES,
  ErrorCode,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_TYPE_BASE,
  ProblemSchema,
  SvcError,
  isSvcError,
  problem,
} from '../../protocol/errors';

/** docs/design.md §9 (and the codes later sections add), in order, with the status each code is sent with (docs/design.md §3, §7, §9). */
const DESIGN_CATALOGUE: [string, number][] = [
  ['svc_auth_not_in_beta', 403],
  ['svc_endpoint_not_granted', 403],
  ['svc_forbidden_user_agent', 403],
  ['svc_rate_limited', 429],
  ['svc_payment_required', 402],
  ['svc_unknown_endpoint', 404],
  ['svc_method_not_allowed', 405],
  ['svc_bad_request', 400],
  ['svc_payload_too_large', 413],
  ['svc_request_timeout', 408],
  ['svc_headers_too_large', 431],
  ['svc_upstream_timeout', 504],
  ['svc_upstream_unavailable', 502],
  ['svc_maintenance', 503],
  ['svc_gateway_not_ready', 503],
  ['svc_unauthorized', 401],
  ['svc_forbidden_scope', 403],
  ['svc_not_found', 404],
  ['svc_conflict', 409],
  ['svc_not_settled', 409],
  ['svc_settler_halted', 409],
  ['svc_receipts_unverified', 503],
  ['svc_store_unavailable', 503],
  ['svc_internal', 500],
];

t.test('the catalogue is exactly the docs/design.md §9 list', async (t) => {
  t.same([...ERROR_CODES].sort(), DESIGN_CATALOGUE.map(([c]) => c).sort(), 'same codes');
  t.equal(new Set(ERROR_CODES).size, ERROR_CODES.length, 'no code listed twice');
  t.same(Object.keys(ERRORS).sort(), [...ERROR_CODES].sort(), 'ERRORS has an entry per code and no other');
  t.same([...ErrorCode.options].sort(), [...ERROR_CODES].sort(), 'the zod enum matches');
  t.equal(ErrorCode.safeParse('svc_teapot').success, false, 'an unknown code does not parse');
  t.equal(PROBLEM_CONTENT_TYPE, 'application/problem+json');
});

t.test('each code: status, title and problem() body', async (t) => {
  for (const [code, status] of DESIGN_CATALOGUE) {
    t.test(code, async (t) => {
      const spec = ERRORS[code as ErrorCode];
      t.ok(spec, 'has a catalogue entry');
      t.equal(spec.status, status, `status is ${status}`);
      t.ok(spec.status >= 400 && spec.status <= 599 && Number.isInteger(spec.status), 'status is 4xx or 5xx');
      t.match(spec.title, /\S/, 'has a title');
      t.match(spec.when, /\S/, 'says when it is used');

      const body = problem(code as ErrorCode);
      t.same(Object.keys(body).sort(), ['code', 'detail', 'status', 'title', 'type'], 'exactly the RFC 9457 members and code');
      t.equal(body.type, PROBLEM_TYPE_BASE + code, 'type is the base URI plus the code');
      t.ok(body.type.endsWith(`#${code}`), 'type ends with #code');
      t.equal(body.status, status, 'status member matches');
      t.equal(body.title, spec.title, 'title member matches');
      t.equal(body.detail, spec.title, 'detail defaults to the title');
      t.equal(body.code, code, 'code member');
      t.ok(ProblemSchema.safeParse(body).success, 'parses as a problem');

      const detailed = problem(code as ErrorCode, 'something specific', { errors: [{ field: 'x', message: 'bad' }] });
      t.equal(detailed.detail, 'something specific', 'detail is used when given');
      t.same(detailed.errors, [{ field: 'x', message: 'bad' }], 'extension members are added');
      t.equal(detailed.code, code, 'extensions keep the code');
    });
  }
});

t.test('SvcError carries status, headers, extras and cause', async (t) => {
  for (const code of ERROR_CODES) {
    const err = new SvcError(code);
    t.equal(err.status, ERRORS[code].status, `${code}: status from the catalogue`);
    t.equal(err.code, code);
    t.equal(err.message, ERRORS[code].title, `${code}: message defaults to the title`);
    t.same(err.headers, {}, `${code}: no headers by default`);
  }

  const cause = new Error('socket hang up');
  const err = new SvcError('svc_rate_limited', 'slow down', {
    headers: { 'retry-after': '7' },
    extra: { limit: 60 },
    cause,
  });
  t.ok(err instanceof Error, 'is an Error');
  t.ok(isSvcError(err), 'isSvcError recognises it');
  t.notOk(isSvcError(new Error('x')), 'isSvcError rejects a plain Error');
  t.notOk(isSvcError({ code: 'svc_internal', status: 500 }), 'isSvcError rejects a look-alike object');
  t.equal(err.name, 'SvcError');
  t.equal(err.status, 429);
  t.same(err.headers, { 'retry-after': '7' });
  t.equal(err.cause, cause, 'keeps the cause');
  const body = err.toProblem();
  t.equal(body.code, 'svc_rate_limited');
  t.equal(body.status, 429);
  t.equal(body.detail, 'slow down');
  t.equal(body.limit, 60, 'extra becomes an extension member');
  t.equal(body.type, PROBLEM_TYPE_BASE + 'svc_rate_limited');
});
