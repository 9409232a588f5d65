// Endpoint response schemas in the gateway's state: compiled when a snapshot or delta is
// applied, once per distinct schema (equal schemas share one validator, also across states and
// deltas), dropped once no endpoint uses them; a schema that does not compile rejects the update.
import t from 'tap';
import { GatewayState, SnapshotBuilder, UpdateRejected } from '../../gateway/state/state';
import { SnapshotDigest, type Delta, type SnapshotEndpoint } from '../../protocol/snapshot';

const FLAGS = { beta_gate_enabled: false, maintenance_mode: false };
const LIMITS = { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } };

const ORDER = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer' }, ref: { $ref: '#/$defs/ref' } },
  $defs: { ref: { type: 'string', pattern: '^[A-Z]+-\\d+$' } },
};
/** The same schema, members in another order. */
const ORDER_REORDERED = {
  $defs: { ref: { pattern: '^[A-Z]+-\\d+$', type: 'string' } },
  properties: { ref: { $ref: '#/$defs/ref' }, id: { type: 'integer' } },
  required: ['id'],
  type: 'object',
};
const OTHER = { oneOf: [{ type: 'integer' }, { type: 'string' }] };

const endpoint = (id: string, response_schema?: Record<string, unknown>): SnapshotEndpoint => ({
  id,
  upstream: 'http://127.0.0.1:9/',
  methods: ['POST'],
  timeout_ms: 1000,
  sla_ms: 500,
  price: 0,
  premium: 0,
  headers: {},
  ...(response_schema === undefined ? {} : { response_schema }),
});

/** A full snapshot of `endpoints` through the builder, as the sync client applies one. */
function snapshot(version: number, endpoints: SnapshotEndpoint[]): GatewayState {
  const begin = JSON.stringify({
    type: 'snapshot_begin',
    version,
    epoch: 1,
    generated_at: '2030-01-01T00:00:00.000Z',
    flags: FLAGS,
    limits: LIMITS,
    endpoints,
    key_count: 0,
  });
  const builder = new SnapshotBuilder(begin);
  const digest = new SnapshotDigest();
  digest.update(begin);
  return builder.finish(version, digest.digest());
}

const delta = (s: GatewayState, body: Partial<Delta>): Delta => ({
  type: 'delta',
  version: s.version + 1,
  base: s.version,
  sha256: '0'.repeat(64),
  ...body,
});
const schemaOf = (s: GatewayState, id: string) => s.endpoints.get(id)!.responseSchema;

t.test('one validator per distinct schema, kept across snapshots and deltas while in use', async (t) => {
  const first = snapshot(1, [endpoint('a', ORDER), endpoint('b', ORDER_REORDERED), endpoint('c', OTHER), endpoint('plain')]);
  const order = schemaOf(first, 'a')!;
  t.type(order, 'function');
  t.equal(schemaOf(first, 'b'), order, 'an equal schema in another member order shares the validator');
  t.not(schemaOf(first, 'c'), order);
  t.equal(schemaOf(first, 'plain'), null);
  t.equal(order({ id: 1, ref: 'AB-12' }), null, 'the validator judges by the schema: $ref and pattern');
  t.match(order({ id: 1, ref: 'ab' }), /#\/ref: must match pattern/);
  t.match(schemaOf(first, 'c')!(1.5), /must match exactly one schema in oneOf/);

  const second = snapshot(2, [endpoint('a', ORDER_REORDERED), endpoint('c', OTHER)]);
  t.equal(schemaOf(second, 'a'), order, 'a new full snapshot reuses the compiled validator');
  const other = schemaOf(second, 'c');
  t.equal(other, schemaOf(first, 'c'));

  second.applyDelta(delta(second, { endpoints_upsert: [{ ...endpoint('a', ORDER), timeout_ms: 2000 }] }));
  t.equal(second.endpoints.get('a')!.timeoutMs, 2000);
  t.equal(schemaOf(second, 'a'), order, 'an upsert with the schema unchanged keeps the validator');

  second.applyDelta(delta(second, { endpoints_upsert: [endpoint('a', OTHER)] }));
  t.equal(schemaOf(second, 'a'), other, 'a changed schema that another endpoint uses is shared');
  second.applyDelta(delta(second, { endpoints_upsert: [endpoint('a', ORDER)] }));
  t.not(schemaOf(second, 'a'), order, 'a schema no endpoint used after the last update was dropped, and is compiled again');
  t.equal(schemaOf(second, 'a')!({ id: 'x' }) !== null, true, 'and judges the same');
});

t.test('a schema that does not compile rejects the update and changes nothing', async (t) => {
  const s = new GatewayState({ version: 1, epoch: 1, flags: FLAGS, limits: LIMITS, endpoints: [endpoint('a', OTHER)] });
  const before = schemaOf(s, 'a');
  t.throws(() => s.applyDelta(delta(s, { endpoints_upsert: [endpoint('a', { type: 'object', nope: 1 })] })), {
    name: 'UpdateRejected',
    message: /endpoint a: invalid response schema: .*unknown keyword: "nope"/,
  });
  t.throws(() => s.applyDelta(delta(s, { endpoints_upsert: [endpoint('b', { $ref: '#/$defs/none' })] })), UpdateRejected);
  t.equal(s.version, 1);
  t.equal(schemaOf(s, 'a'), before);
  t.notOk(s.endpoints.has('b'));
  t.throws(() => snapshot(3, [endpoint('a', { type: 'float' })]), {
    name: 'UpdateRejected',
    message: /endpoint a: invalid response schema: #\/type/,
  });
});

t.test('a schema stored before Ajv, with annotations the 2020-12 meta-schema refuses, still loads', async (t) => {
  const legacy = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 7,
    type: 'object',
    required: ['id'],
    properties: { id: { type: 'integer' } },
  };
  const s = snapshot(1, [endpoint('old', legacy)]);
  t.equal(schemaOf(s, 'old')!({ id: 1 }), null);
  t.not(schemaOf(s, 'old')!({ id: 'x' }), null, 'its rules are enforced as before');
});
