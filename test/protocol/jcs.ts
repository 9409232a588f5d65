/**
 * RFC 8785 (JCS) canonical JSON: the RFC's own examples byte for byte, the input it refuses,
 * and the receipt leaf's hand-written canonical form held equal to the general one.
 */
import t from 'tap';
import { canonicalBytes, canonicalize, type JsonValue } from '../../protocol/jcs';
import { leafCanonical, type ReceiptLeafFields } from '../../protocol/receipts-verify';

t.test('RFC 8785 §3.2.2: the sample object, sorted, numbers and strings written as ECMAScript does', async (t) => {
  const input = JSON.parse(
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], ' +
      '"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
  ) as JsonValue;
  const want =
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';
  t.equal(canonicalize(input), want);
  // §3.2.4: UTF-8 bytes, the euro sign raw (e2 82 ac), not escaped.
  const bytes = canonicalBytes(input);
  t.ok(bytes.includes(Buffer.of(0xe2, 0x82, 0xac)), 'the euro sign is written as UTF-8');
  t.equal(bytes.length, Buffer.byteLength(want, 'utf8'));
});

t.test('RFC 8785 §3.2.3: members sorted by UTF-16 code units, not by code points or locale', async (t) => {
  const input = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  // Read the text: JSON.parse would put the integer-like name first again.
  const text = canonicalize(input);
  const values = [...text.matchAll(/:"([^"]+)"/g)].map((m) => m[1]);
  t.same(values, [
    'Carriage Return',
    'One',
    'Control',
    'Latin Small Letter O With Diaeresis',
    'Euro Sign',
    'Emoji: Grinning Face',
    'Hebrew Letter Dalet With Dagesh',
  ]);
});

t.test('nesting, whitespace and integers', async (t) => {
  t.equal(
    canonicalize({ b: [1, { d: null, c: 'x' }], a: -0, e: 9007199254740991 }),
    '{"a":0,"b":[1,{"c":"x","d":null}],"e":9007199254740991}',
  );
  t.equal(canonicalize('tab\tquote"backslash\\'), '"tab\\tquote\\"backslash\\\\"');
  t.equal(canonicalize([]), '[]');
  t.equal(canonicalize({}), '{}');
});

t.test('input outside I-JSON is refused, not guessed', async (t) => {
  t.throws(() => canonicalize(Number.NaN), TypeError);
  t.throws(() => canonicalize(Number.POSITIVE_INFINITY), TypeError);
  t.throws(() => canonicalize('\ud800'), TypeError, 'a lone high surrogate');
  t.throws(() => canonicalize({ ['\udc00']: 1 }), TypeError, 'a lone low surrogate in a name');
  t.throws(() => canonicalize({ a: undefined } as unknown as JsonValue), TypeError, 'undefined');
  t.throws(() => canonicalize(new Date(0) as unknown as JsonValue), TypeError, 'a class instance');
  t.throws(() => canonicalize(BigInt(1) as unknown as JsonValue), TypeError, 'a bigint');
  t.equal(canonicalize('\ud83d\ude00'), '"😀"', 'a surrogate pair is one character');
});

t.test("a receipt leaf's canonical form is the general JCS form", async (t) => {
  const leaves: ReceiptLeafFields[] = [
    {
      batch: 1,
      call_id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      provider: 'prv_3yqD8XnMEyXX',
      outcome: 'server_error',
      premium: 0,
      refund: 2150,
      clamp: null,
    },
    { batch: 9007199254740991, call_id: 'x', provider: 'p', outcome: 'ok', premium: 150, refund: 0, clamp: 'cap_clamped' },
    {
      batch: 2,
      call_id: 'quote " and \\ and \u0001 and é and 😀',
      provider: 'prv_\u2028',
      outcome: 'network_error',
      premium: 0,
      refund: 7,
      clamp: 'pool_depleted',
    },
  ];
  for (const leaf of leaves) t.equal(leafCanonical(leaf), canonicalize(leaf as unknown as JsonValue), leaf.call_id);
  t.throws(() => leafCanonical({ ...leaves[0]!, refund: 1.5 }), TypeError, 'amounts are integers');
  t.throws(() => leafCanonical({ ...leaves[0]!, call_id: 'bad \ud800' }), TypeError, 'strings are well formed');
  t.equal(
    leafCanonical(leaves[0]!),
    '{"batch":1,"call_id":"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","clamp":null,"outcome":"server_error","premium":0,"provider":"prv_3yqD8XnMEyXX","refund":2150}',
    'members in code-unit order, no whitespace',
  );
});
