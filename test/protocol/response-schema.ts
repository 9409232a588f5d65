// The response-schema subset: what is accepted when stored, and how values are judged.
import t from 'tap';
import { MAX_SCHEMA_DEPTH, ResponseSchema, codePointLength, compileSchema, schemaProblems } from '../../protocol/response-schema';

t.test('stored schemas: the subset and nothing else', async (t) => {
  t.same(schemaProblems({}), [], 'the empty schema accepts anything');
  t.same(
    schemaProblems({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: 'weather',
      description: 'd',
      type: 'object',
      required: ['temp'],
      properties: {
        temp: { type: 'number', minimum: -100, maximum: 100 },
        unit: { enum: ['C', 'F'] },
        tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 20 } },
        note: { type: ['string', 'null'] },
      },
    }),
    [],
    'every supported keyword, plus annotations',
  );
  t.match(schemaProblems({ type: 'object', additionalProperties: false })[0], /#: keyword "additionalProperties" is not supported/);
  t.match(schemaProblems({ properties: { a: { pattern: '^x' } } })[0], /#\/properties\/a: keyword "pattern" is not supported/);
  t.match(schemaProblems({ type: 'float' })[0], /#\/type: must be one of/);
  t.match(schemaProblems({ type: [] })[0], /#\/type/);
  t.match(schemaProblems({ type: ['string', 'string'] })[0], /#\/type/);
  t.match(schemaProblems({ required: 'a' })[0], /#\/required/);
  t.match(schemaProblems({ required: ['a', 'a'] })[0], /#\/required/);
  t.match(schemaProblems({ items: [{ type: 'string' }] })[0], /#\/items: a schema must be a JSON object/, 'tuple items are not supported');
  t.match(schemaProblems({ enum: [] })[0], /#\/enum/);
  t.match(schemaProblems({ minimum: '1' })[0], /#\/minimum/);
  t.match(schemaProblems({ minLength: -1 })[0], /#\/minLength/);
  t.match(schemaProblems({ maxLength: 1.5 })[0], /#\/maxLength/);
  t.match(schemaProblems(true)[0], /a schema must be a JSON object/, 'boolean schemas are not supported');
  t.match(schemaProblems({ properties: { description: 5 } })[0], /#\/properties\/description: a schema must be a JSON object/, 'a property named like an annotation is a property');
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i <= MAX_SCHEMA_DEPTH; i++) deep = { items: deep };
  t.match(schemaProblems(deep).join(), /deeper than 32/);
  t.match(schemaProblems({ enum: ['x'.repeat(70 * 1024)] })[0], /the limit is 65536/);

  const parsed = ResponseSchema.safeParse({ type: 'object', nope: 1 });
  t.notOk(parsed.success, 'the zod schema refuses it too');
  t.ok(ResponseSchema.safeParse({ type: 'object' }).success);
  t.throws(() => compileSchema({ type: 'nope' }), /invalid response schema/);
});

t.test('judging values', async (t) => {
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
  t.match(v({ id: 1, temp: 'x' }), /#\/temp: expected number, got string/, 'the problem names the path');
  t.equal(compileSchema({ type: 'number' })(3), null, 'an integer is a number');
  t.equal(compileSchema({ minLength: 2 })(5), null, 'string keywords ignore other types');
  t.equal(compileSchema({})(undefined), null);
  t.equal(codePointLength('a🐢b'), 3);
  t.equal(codePointLength('\ud800x'), 2, 'a lone surrogate counts as one');
});
