// Response schemas (JSON Schema 2020-12 through Ajv): what is accepted when stored, and how
// values are judged.
import t from 'tap';
import { MAX_SCHEMA_DEPTH, ResponseSchema, compileSchema, schemaProblems } from '../../protocol/response-schema';

t.test('stored schemas: JSON Schema 2020-12, strictly', async (t) => {
  t.same(schemaProblems({}), [], 'the empty schema accepts anything');
  t.same(
    schemaProblems({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'https://schemas.example/weather',
      title: 'weather',
      description: 'd',
      $comment: 'c',
      type: 'object',
      required: ['temp'],
      properties: {
        temp: { type: 'number', minimum: -100, maximum: 100, examples: [20] },
        unit: { enum: ['C', 'F'], default: 'C' },
        tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 20 } },
        note: { type: ['string', 'null'] },
        at: { type: 'string', format: 'date-time' },
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false },
        id: { $ref: '#/$defs/id' },
      },
      additionalProperties: false,
      $defs: { id: { type: 'string', pattern: '^[a-z]+$' } },
    }),
    [],
    'the old subset, annotations, and keywords the subset refused',
  );
  const refused: [unknown, RegExp, string][] = [
    [{ type: 'object', nope: 1 }, /unknown keyword: "nope"/, 'an unknown keyword is refused, not ignored'],
    [{ properties: { a: { nope: 1 } } }, /unknown keyword: "nope"/, 'also nested'],
    [{ type: 'float' }, /#\/type: must be/, 'an unknown type'],
    [{ type: [] }, /#\/type/, 'an empty type list'],
    [{ required: 'a' }, /#\/required: must be array/, 'required is a list'],
    [{ items: [{ type: 'string' }] }, /#\/items: must be object,boolean/, '2020-12 tuples are prefixItems'],
    [{ minimum: '1' }, /#\/minimum: must be number/, 'minimum is a number'],
    [{ minLength: -1 }, /#\/minLength/, 'minLength ≥ 0'],
    [{ maxLength: 1.5 }, /#\/maxLength/, 'maxLength whole'],
    [
      { properties: { description: 5 } },
      /#\/properties\/description: must be object,boolean/,
      'a property named like an annotation is a property',
    ],
    [{ format: 'emailish' }, /unknown format "emailish"/, 'an unknown format is refused'],
    [{ pattern: '(' }, /Invalid regular expression/, 'a pattern that is not a regular expression'],
    [{ $ref: '#/$defs/missing' }, /can't resolve reference #\/\$defs\/missing/, 'a $ref to nothing'],
    [{ $ref: 'https://schemas.example/other.json' }, /can't resolve reference/, 'nothing is fetched'],
    [{ $schema: 'http://json-schema.org/draft-07/schema#' }, /#\/\$schema: only draft 2020-12/, 'another draft'],
    [{ $async: true }, /"\$async" is not supported/, 'a validator that answers a Promise'],
    [true, /a response schema must be a JSON object/, 'a boolean schema at the top'],
    [[], /a response schema must be a JSON object/, 'an array'],
    [{ enum: [10n] }, /is not a JSON value/, 'not JSON at all'],
  ];
  for (const [doc, want, label] of refused) t.match(schemaProblems(doc).join('\n'), want, label);

  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) deep = { items: deep };
  t.match(schemaProblems(deep).join(), new RegExp(`deeper than ${MAX_SCHEMA_DEPTH}`));
  t.same(schemaProblems(deep.items), [], 'one level less is fine');
  t.match(schemaProblems({ enum: ['x'.repeat(70 * 1024)] })[0], /the limit is 65536/);

  const parsed = ResponseSchema.safeParse({ type: 'object', nope: 1 });
  t.notOk(parsed.success, 'the zod schema refuses it too');
  t.ok(ResponseSchema.safeParse({ type: 'object', additionalProperties: { type: 'string' } }).success);
  t.throws(() => compileSchema({ type: 'nope' }), /invalid response schema/);
});

t.test('one schema never sees another', async (t) => {
  const a = { $id: 'https://schemas.example/a', type: 'integer' };
  t.same(schemaProblems(a), []);
  t.same(schemaProblems(a), [], 'the same $id twice is no conflict');
  compileSchema(a);
  t.match(
    schemaProblems({ $ref: 'https://schemas.example/a' }).join(),
    /can't resolve reference/,
    'a schema compiled before is not in reach',
  );
});

t.test('judging values: the old subset', async (t) => {
  const v = compileSchema({
    type: 'object',
    required: ['id', 'temp'],
    properties: {
      id: { type: 'integer', minimum: 1 },
      temp: { type: 'number', minimum: -100, maximum: 100 },
      unit: { enum: ['C', 'F', { custom: [1, 2] }] },
      tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 3 } },
      note: { type: ['string', 'null'] },
    },
  });
  const cases: [unknown, boolean, string][] = [
    [{ id: 1, temp: 20.5 }, true, 'minimal'],
    [{ id: 1, temp: 20, unit: 'C', tags: ['a', 'bcd'], note: null, extra: { anything: true } }, true, 'everything, and an extra property'],
    [{ id: 1 }, false, 'missing a required property'],
    [{ id: 1.5, temp: 0 }, false, 'integer expected'],
    [{ id: 0, temp: 0 }, false, 'below minimum'],
    [{ id: 1, temp: 100.1 }, false, 'above maximum'],
    [{ id: 1, temp: 100 }, true, 'maximum is inclusive'],
    [{ id: 1, temp: '20' }, false, 'a string for a number'],
    [{ id: 1, temp: 1, unit: 'K' }, false, 'not in enum'],
    [{ id: 1, temp: 1, unit: { custom: [1, 2] } }, true, 'enum compares JSON values'],
    [{ id: 1, temp: 1, unit: { custom: [2, 1] } }, false, 'array order matters in enum'],
    [{ id: 1, temp: 1, tags: ['abcd'] }, false, 'maxLength'],
    [{ id: 1, temp: 1, tags: [''] }, false, 'minLength'],
    [{ id: 1, temp: 1, tags: ['🐢🐢🐢'] }, true, 'lengths count code points, not UTF-16 units'],
    [{ id: 1, temp: 1, tags: ['\ud800xy'] }, true, 'a lone surrogate counts as one'],
    [{ id: 1, temp: 1, tags: ['\ud800xyz'] }, false, 'and is counted'],
    [{ id: 1, temp: 1, tags: 'a' }, false, 'array expected'],
    [{ id: 1, temp: 1, note: 5 }, false, 'type list'],
    [[], false, 'an array is not an object'],
    [null, false, 'null is not an object'],
    [JSON.parse('{"__proto__": {"id": 1}, "temp": 1}'), false, '__proto__ is an ordinary key, not inherited'],
  ];
  for (const [value, ok, label] of cases) {
    const problem = v(value);
    t.equal(problem === null, ok, `${label}${problem ? ` (${problem})` : ''}`);
  }
  t.match(v({ id: 1, temp: 'x' }), /#\/temp: must be number/, 'the problem names the path');
  t.equal(compileSchema({ type: 'number' })(3), null, 'an integer is a number');
  t.equal(compileSchema({ minLength: 2 })(5), null, 'string keywords ignore other types');
  t.equal(compileSchema({})(undefined), null);
  t.not(compileSchema({ required: ['toString'] })({}), null, 'only own properties count');
});

/** Judge each value with `schema`: true where it conforms. */
const judge = (schema: Record<string, unknown>, values: unknown[]): boolean[] => {
  const v = compileSchema(schema);
  return values.map((value) => v(value) === null);
};

t.test('judging values: keywords beyond the old subset', async (t) => {
  t.same(
    judge(
      {
        $defs: { money: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum: 0 } } } },
        type: 'object',
        properties: { price: { $ref: '#/$defs/money' }, fee: { $ref: '#/$defs/money' } },
      },
      [{ price: { amount: 5 } }, { price: { amount: 5 }, fee: { amount: -1 } }, { fee: {} }],
    ),
    [true, false, false],
    '$ref into $defs, used twice',
  );
  t.same(
    judge(
      {
        $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } }, additionalProperties: false } },
        $ref: '#/$defs/node',
      },
      [{ next: { next: {} } }, { next: { next: { other: 1 } } }],
    ),
    [true, false],
    'a recursive $ref',
  );
  t.same(
    judge({ oneOf: [{ type: 'integer' }, { type: 'number', minimum: 10 }] }, [1, 2.5, 10.5, 12]),
    [true, false, true, false],
    'oneOf: exactly one (12 matches both)',
  );
  t.same(judge({ anyOf: [{ type: 'string' }, { type: 'null' }] }, ['a', null, 1]), [true, true, false], 'anyOf');
  t.same(judge({ allOf: [{ minimum: 1 }, { maximum: 3 }] }, [2, 0, 4]), [true, false, false], 'allOf');
  t.same(judge({ not: { type: 'string' } }, [1, 'a']), [true, false], 'not');
  t.same(judge({ type: 'string', pattern: '^[A-Z]{3}-\\d+$' }, ['ABC-12', 'abc-12', 'ABC-']), [true, false, false], 'pattern');
  t.same(judge({ type: 'string', pattern: '^\\p{Lu}' }, ['Élan', 'élan']), [true, false], 'patterns are Unicode regular expressions');
  t.same(
    judge(
      { type: 'object', if: { properties: { kind: { const: 'card' } } }, then: { required: ['last4'] }, else: { required: ['iban'] } },
      [{ kind: 'card', last4: '4242' }, { kind: 'card', iban: 'x' }, { kind: 'bank', iban: 'x' }, { kind: 'bank' }],
    ),
    [true, false, true, false],
    'if / then / else',
  );
  t.same(
    judge({ type: 'object', additionalProperties: false, properties: { a: {} } }, [{ a: 1 }, { a: 1, b: 2 }]),
    [true, false],
    'additionalProperties',
  );
  t.same(
    judge({ type: 'object', patternProperties: { '^x-': { type: 'string' } } }, [{ 'x-a': 's' }, { 'x-a': 1 }, { y: 1 }]),
    [true, false, true],
    'patternProperties',
  );
  t.same(
    judge({ type: 'object', properties: { a: {} }, unevaluatedProperties: false, anyOf: [{ properties: { b: {} } }] }, [
      { a: 1, b: 2 },
      { a: 1, c: 3 },
    ]),
    [true, false],
    'unevaluatedProperties sees through anyOf',
  );
  t.same(
    judge({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false }, [
      ['a', 1],
      ['a', 'b'],
      ['a', 1, 2],
    ]),
    [true, false, false],
    'tuples',
  );
  t.same(
    judge({ type: 'array', contains: { const: 'x' }, minContains: 2 }, [
      ['x', 'x'],
      ['x', 'y'],
    ]),
    [true, false],
    'contains / minContains',
  );
  t.same(
    judge({ type: 'array', uniqueItems: true, minItems: 2, maxItems: 3 }, [[1, 2], [1, 1], [1], [1, 2, 3, 4]]),
    [true, false, false, false],
    'array counts',
  );
  t.same(
    judge({ type: 'object', minProperties: 1, dependentRequired: { card: ['cvc'] } }, [{ a: 1 }, {}, { card: 1 }]),
    [true, false, false],
    'object counts, dependentRequired',
  );
  t.same(
    judge({ type: 'number', exclusiveMinimum: 0, multipleOf: 0.5 }, [0.5, 0, 0.7]),
    [true, false, false],
    'exclusiveMinimum, multipleOf',
  );
  t.same(judge({ type: 'string', format: 'date-time' }, ['2026-01-02T03:04:05Z', '2026-13-02']), [true, false], 'format is asserted');
  t.same(judge({ type: 'string', format: 'uuid' }, ['3f1c2a4e-9b7d-4c1a-8e2f-0a1b2c3d4e5f', 'nope']), [true, false], 'format uuid');
  t.same(judge({ properties: { a: true, b: false } }, [{ a: 1 }, { b: 1 }]), [true, false], 'boolean subschemas');
});

t.test('schemas stored before Ajv still compile, enforcing what they did', async (t) => {
  let deep: Record<string, unknown> = { type: 'string', maxLength: 1 };
  for (let i = 0; i < 32; i++) deep = { type: 'object', properties: { a: deep } };
  t.same(schemaProblems(deep), [], 'the old subset nested 32 levels deep is within the depth limit');
  let value: unknown = 'x';
  for (let i = 0; i < 32; i++) value = { a: value };
  t.equal(compileSchema(deep)(value), null);

  const legacy = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 42,
    type: 'object',
    required: ['id'],
    properties: {
      id: { type: 'integer', examples: 'one', description: ['x'] },
      tags: { type: 'array', items: { type: 'string', default: 1, maxLength: 2 } },
    },
  };
  t.ok(schemaProblems(legacy).length > 0, 'control refuses it as a new schema');
  const v = compileSchema(legacy);
  t.equal(v({ id: 1, tags: ['ab'] }), null, 'the gateway compiles it without the annotations');
  t.not(v({ id: 'x' }), null, 'and enforces its rules');
  t.not(v({ id: 1, tags: ['abc'] }), null);
  t.not(v({}), null);

  t.throws(
    () => compileSchema({ $schema: 'http://json-schema.org/draft-07/schema#', pattern: '^a' }),
    /only draft 2020-12/,
    'a keyword outside the old subset gets no allowance',
  );
  t.throws(() => compileSchema({ title: 1, type: 'nope' }), /invalid response schema/, 'nor a broken old-subset keyword');
  t.throws(() => compileSchema({ title: 1, properties: { a: { nope: 1 } } }), /invalid response schema/);
  t.throws(() => compileSchema({ title: 1, properties: 5 }), /invalid response schema/);
  t.throws(() => compileSchema({ title: 1, items: { title: 1, nope: 1 } }), /invalid response schema/);
});
