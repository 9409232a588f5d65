/**
 * Every string field the admin API takes refuses C0/C1 control characters (U+0000–U+001F,
 * U+007F–U+009F) with 400 `svc_bad_request` naming the field; a tab passes only in free text
 * (notes, changelog text, reasons), and line breaks only in answers typed into a text area.
 * Bidi controls (U+202E and the rest), the line and paragraph separators U+2028/U+2029 and
 * noncharacters (U+FFFE, U+FDD0, U+10FFFF, …) are refused in every field, free text included,
 * since a public page would show them. Nothing refused is stored, and the error never echoes
 * the value.
 */
import t from 'tap';
import { agentAnswers, merchantAnswers, SOLANA_WALLET } from '../fixtures/applications';
import { startTestControl, type TestControl } from '../fixtures/control';

type Kind = 'line' | 'text' | 'multiline';

interface FieldCase {
  /** What the table row is about. */
  name: string;
  method: string;
  /** Path; may depend on what `prepare` created. */
  path: (prepared: string) => string;
  /** The field `errors` must name. */
  field: string;
  kind: Kind;
  /** A valid body with `value` in the field under test. */
  body: (value: string, n: number) => unknown;
  /** Runs before each request that is expected to succeed; its result goes to `path`. */
  prepare?: (control: TestControl, n: number) => Promise<string>;
}

const UPSTREAM = 'http://127.0.0.1:9/api';

/** `U+001B U+005B …`: the characters under test, named, so none of them reaches the TAP stream raw. */
const codePoints = (text: string) => [...text].map((ch) => 'U+' + ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')).join(' ');

/** Valid text around the character under test, so only the character can be at fault. */
const around = (ch: string) => `left${ch}right`;

const FIELDS: FieldCase[] = [
  { name: 'key name', method: 'POST', path: () => '/_admin/v1/keys', field: 'name', kind: 'line', body: (v) => ({ name: v }) },
  {
    name: 'key application id',
    method: 'POST',
    path: () => '/_admin/v1/keys',
    field: 'application_id',
    kind: 'line',
    body: (v) => ({ application_id: v }),
  },
  {
    name: 'endpoint upstream (add)',
    method: 'POST',
    path: () => '/_admin/v1/endpoints',
    field: 'upstream',
    kind: 'line',
    body: (v, n) => ({ id: `ep${n}`, upstream: `http://example.com/${v}` }),
  },
  {
    name: 'endpoint upstream (update)',
    method: 'PATCH',
    path: () => '/_admin/v1/endpoints/base',
    field: 'upstream',
    kind: 'line',
    body: (v) => ({ upstream: `http://example.com/${v}` }),
  },
  {
    name: 'endpoint display name (add)',
    method: 'POST',
    path: () => '/_admin/v1/endpoints',
    field: 'display_name',
    kind: 'line',
    body: (v, n) => ({ id: `dn${n}`, upstream: UPSTREAM, display_name: v }),
  },
  {
    name: 'endpoint display name (update)',
    method: 'PATCH',
    path: () => '/_admin/v1/endpoints/base',
    field: 'display_name',
    kind: 'line',
    body: (v) => ({ display_name: v }),
  },
  {
    name: 'injected header value',
    method: 'POST',
    path: () => '/_admin/v1/endpoints',
    field: 'headers',
    kind: 'line',
    body: (v, n) => ({ id: `hd${n}`, upstream: UPSTREAM, headers: { 'X-Api-Key': v } }),
  },
  {
    name: 'flag note',
    method: 'PUT',
    path: () => '/_admin/v1/flags/maintenance_mode',
    field: 'note',
    kind: 'text',
    body: (v, n) => ({ value: n % 2 === 1, note: v }),
  },
  { name: 'changelog text', method: 'POST', path: () => '/_admin/v1/changelog', field: 'text', kind: 'text', body: (v) => ({ text: v }) },
  {
    name: 'pool funding note',
    method: 'POST',
    path: () => '/_admin/v1/pool/fund',
    field: 'note',
    kind: 'text',
    body: (v) => ({ amount: 1, note: v }),
  },
  {
    name: 'payout reference',
    method: 'POST',
    path: () => '/_admin/v1/payouts/mark-paid',
    field: 'reference',
    kind: 'line',
    body: (v) => ({ wallet: SOLANA_WALLET, amount: 1, reference: v }),
  },
  {
    name: 'application rejection reason',
    method: 'POST',
    path: (id) => `/_admin/v1/applications/${id}/reject`,
    field: 'reason',
    kind: 'text',
    body: (v) => ({ reason: v }),
    prepare: async (control, n) => {
      const res = await control.admin('POST', '/_admin/v1/applications', { application: agentAnswers({ contact_name: `Reject Me ${n}` }) });
      return res.body.application.id as string;
    },
  },
  ...(
    [
      ['contact_name', 'line', (v: string, n: number) => agentAnswers({ contact_name: `${v} ${n}` })],
      ['messaging_handle', 'line', (v: string, n: number) => agentAnswers({ messaging_handle: `${v} ${n}` })],
      ['social_url', 'line', (v: string, n: number) => agentAnswers({ social_url: `https://github.com/${v}${n}` })],
      ['apis_paid.0', 'line', (v: string, n: number) => agentAnswers({ apis_paid: [`${v} ${n}`] })],
      ['building', 'multiline', (v: string, n: number) => agentAnswers({ building: `${v} ${n}` })],
      ['why', 'multiline', (v: string, n: number) => merchantAnswers({ why: `${v} ${n}` })],
    ] as const
  ).map(([field, kind, answers]): FieldCase => ({
    name: `application ${field} (svcctl applications add)`,
    method: 'POST',
    path: () => '/_admin/v1/applications',
    field,
    kind,
    body: (v, n) => ({ application: answers(v, n) }),
  })),
];

/** Characters refused everywhere: C0 (other than tab, LF, CR), DEL and C1. */
const ALWAYS_REFUSED = [
  '\u0000',
  '\u0007',
  '\u0008',
  '\u000b',
  '\u000c',
  '\u001b[2J',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u0085',
  '\u009b',
  '\u009f',
];
const LINE_BREAKS = ['\n', '\r', '\r\n'];
/** Characters that make text read other than it is, refused in every field; and what the message names. */
const SPOOFING: [string, RegExp][] = [
  ['\u202e', /bidirectional text controls \(found U\+202E\)/],
  ['\u202a', /bidirectional text controls/],
  ['\u202d', /bidirectional text controls/],
  ['\u200e', /bidirectional text controls/],
  ['\u200f', /bidirectional text controls/],
  ['\u2066', /bidirectional text controls/],
  ['\u2069', /bidirectional text controls/],
  ['\u061c', /bidirectional text controls/],
  ['\u2028', /line or paragraph separators \(found U\+2028\)/],
  ['\u2029', /line or paragraph separators/],
  ['\ufffe', /noncharacters \(found U\+FFFE\)/],
  ['\uffff', /noncharacters/],
  ['\ufdd0', /noncharacters/],
  ['\ufdef', /noncharacters/],
  ['\u{1fffe}', /noncharacters \(found U\+1FFFE\)/],
  ['\u{10ffff}', /noncharacters/],
];
const SPOOFING_REASON = new Map(SPOOFING);

function accepted(kind: Kind, ch: string): boolean {
  if (ch === '\t') return kind !== 'line';
  if (LINE_BREAKS.includes(ch)) return kind === 'multiline';
  return false;
}

t.test('control characters are refused with the field named; tab only in free text', async (t) => {
  const control = await startTestControl(t);
  const base = await control.admin('POST', '/_admin/v1/endpoints', { id: 'base', upstream: UPSTREAM });
  t.equal(base.status, 201);
  let n = 0;
  for (const c of FIELDS) {
    for (const ch of [...ALWAYS_REFUSED, ...LINE_BREAKS, '\t', ...SPOOFING_REASON.keys()]) {
      n += 1;
      const label = `${c.name} with ${codePoints(ch)}`;
      const value = around(ch);
      const expectOk = accepted(c.kind, ch);
      const prepared = expectOk && c.prepare ? await c.prepare(control, n) : 'app_111111111111';
      const res = await control.admin(c.method, c.path(prepared), c.body(value, n));
      if (expectOk) {
        t.ok(res.status >= 200 && res.status < 300, `${label}: accepted (${res.status} ${res.text.slice(0, 200)})`);
        continue;
      }
      t.equal(res.status, 400, `${label}: 400`);
      t.match(res.headers.get('content-type'), /^application\/problem\+json/, `${label}: problem+json`);
      t.equal(res.body?.code, 'svc_bad_request', `${label}: svc_bad_request`);
      const named = (res.body?.errors ?? []).filter((e: { field: string }) => e.field === c.field);
      t.equal(named.length, 1, `${label}: errors name ${c.field} (got ${JSON.stringify(res.body?.errors)})`);
      t.match(named[0]?.message ?? '', SPOOFING_REASON.get(ch) ?? /control character/, `${label}: the message says why`);
      t.notOk(res.text.includes('left'), `${label}: the value is not echoed`);
    }
  }

  // Nothing refused reached the database.
  const keys = await control.admin('GET', '/_admin/v1/keys?limit=1000');
  const endpoints = await control.admin('GET', '/_admin/v1/endpoints');
  const changelog = await control.admin('GET', '/_admin/v1/changelog?limit=1000');
  const applications = await control.admin('GET', '/_admin/v1/applications');
  for (const [what, res] of [
    ['keys', keys],
    ['endpoints', endpoints],
    ['changelog', changelog],
    ['applications', applications],
  ] as const) {
    t.equal(res.status, 200);
    const stored: string[] = [];
    JSON.parse(res.text, (_k, v) => (typeof v === 'string' ? (stored.push(v), v) : v));
    // Application answers typed into a text area may keep CR and LF; nothing else may.
    // eslint-disable-next-line no-control-regex -- control characters are what this test looks for
    const textAreaRefused = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
    // eslint-disable-next-line no-control-regex -- as above
    const lineRefused = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
    const refused = what === 'applications' ? textAreaRefused : lineRefused;
    const bad = stored.filter((s) => refused.test(s) || [...SPOOFING_REASON.keys()].some((ch) => s.includes(ch)));
    t.same(bad, [], `${what}: no stored string holds a refused character`);
  }
  t.equal(keys.body.keys.length, 0, 'no key was issued');
  t.same(
    endpoints.body.endpoints.map((e: { id: string }) => e.id),
    ['base'],
    'no endpoint was added',
  );
  t.equal(endpoints.body.endpoints[0].upstream, UPSTREAM, 'the updated endpoint keeps its upstream');
});

t.test('a trailing CR/LF is refused, not trimmed away', async (t) => {
  const control = await startTestControl(t);
  for (const [path, body, field] of [
    ['/_admin/v1/keys', { name: 'agent\r\n' }, 'name'],
    ['/_admin/v1/changelog', { text: 'shipped\n' }, 'text'],
    ['/_admin/v1/endpoints', { id: 'x', upstream: 'http://example.com/api\r\n' }, 'upstream'],
  ] as const) {
    const res = await control.admin('POST', path, body);
    t.equal(res.status, 400, `${path}: 400`);
    t.same(
      res.body.errors.map((e: { field: string }) => e.field),
      [field],
    );
  }
});
