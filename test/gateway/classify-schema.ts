// The classifier with the response-schema check (docs/design.md §6): status × latency × network error
// × schema verdict as one table, and the body check that produces the verdict.
import t from 'tap';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { classify, schemaCheck, type CallFacts, type NetworkError, type SchemaVerdict } from '../../gateway/request/classify';
import { BodyCheck, SCHEMA_BODY_CAP_BYTES, hasCheckableBody, verdictOf } from '../../gateway/request/schema-check';
import { COVERED_FAILURES, type Outcome } from '../../protocol/outcome';
import { compileSchema } from '../../protocol/response-schema';

const SLA = 500;
const STATUSES = [101, 200, 201, 204, 299, 301, 304, 400, 404, 429, 499, 500, 502, 503, 599];
const LATENCIES = [0, SLA, SLA + 1, 60_000];
const NETWORK: (NetworkError | null)[] = [null, 'refused', 'reset', 'timeout'];
const SCHEMA: (SchemaVerdict | undefined)[] = [undefined, 'valid', 'invalid', 'unchecked'];

/** The docs/design.md §6 table written out independently of classify()'s code. */
function expected(status: number | null, latency: number, net: NetworkError | null, schema: SchemaVerdict | undefined): Outcome {
  if (net !== null || status === null) return 'network_error';
  if (status >= 500) return 'server_error';
  if (status >= 400) return 'client_error';
  if (latency > SLA) return 'latency_breach';
  if (status >= 200 && status <= 299 && schema === 'invalid') return 'schema_mismatch';
  return 'ok';
}

t.test('every combination of status, latency, network error and schema verdict', async (t) => {
  let rows = 0;
  const seen = new Set<Outcome>();
  for (const status of [...STATUSES, null]) {
    for (const latencyMs of LATENCIES) {
      for (const networkError of NETWORK) {
        for (const schema of SCHEMA) {
          const facts: CallFacts = { status, latencyMs, slaMs: SLA, networkError, schema };
          const want = expected(status, latencyMs, networkError, schema);
          const got = classify(facts);
          if (got !== want) t.fail(`${JSON.stringify(facts)}: got ${got}, want ${want}`);
          seen.add(got);
          rows++;
        }
      }
    }
  }
  t.equal(rows, (STATUSES.length + 1) * LATENCIES.length * NETWORK.length * SCHEMA.length, 'the whole table ran');
  t.same(
    [...seen].sort(),
    ['client_error', 'latency_breach', 'network_error', 'ok', 'schema_mismatch', 'server_error'],
    'every outcome occurs',
  );
});

t.test('named cases', async (t) => {
  const f = (status: number | null, latencyMs: number, schema?: SchemaVerdict, networkError: NetworkError | null = null): CallFacts => ({
    status,
    latencyMs,
    slaMs: SLA,
    networkError,
    schema,
  });
  t.equal(classify(f(200, 10, 'invalid')), 'schema_mismatch', 'a 2xx failing its schema');
  t.equal(classify(f(200, 10, 'valid')), 'ok');
  t.equal(classify(f(200, 10, 'unchecked')), 'ok', 'a body too large to check is ok');
  t.equal(classify(f(200, SLA + 1, 'invalid')), 'latency_breach', 'slow and wrong: the breach wins (same refund)');
  t.equal(classify(f(301, 10, 'invalid')), 'ok', 'the schema applies to 2xx only');
  t.equal(classify(f(500, 10, 'invalid')), 'server_error');
  t.equal(classify(f(404, 10, 'invalid')), 'client_error');
  t.equal(classify(f(200, 10, 'invalid', 'reset')), 'network_error', 'a reset wins over the body');
  t.ok(COVERED_FAILURES.has('schema_mismatch'), 'schema_mismatch is refunded');
  t.equal(classify(f(200, 10, 'invalid'), []), 'ok', 'with no checks the verdict is ignored');
  t.equal(schemaCheck(f(204, 10, 'invalid')), 'schema_mismatch', 'the check itself looks at 2xx and the verdict only');
});

t.test('which responses have a body to check', async (t) => {
  t.ok(hasCheckableBody('POST', 200));
  t.ok(hasCheckableBody('GET', 299));
  t.notOk(hasCheckableBody('HEAD', 200), 'HEAD has no body');
  t.notOk(hasCheckableBody('POST', 204));
  t.notOk(hasCheckableBody('POST', 205));
  t.notOk(hasCheckableBody('POST', 301));
  t.notOk(hasCheckableBody('POST', 500));
});

const validate = compileSchema({ type: 'object', required: ['id'], properties: { id: { type: 'integer' } } });

function check(body: Buffer | string, headers: Record<string, string> = {}, cap?: number, chunkSize = 7): string {
  const c = new BodyCheck(validate, Object.entries(headers).flat(), cap);
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
  for (let i = 0; i < buf.length; i += chunkSize) c.chunk(buf.subarray(i, i + chunkSize));
  return c.finish();
}

t.test('the body check', async (t) => {
  t.equal(check('{"id":1}'), 'valid');
  t.equal(check('{"id":"1"}'), 'invalid', 'JSON that fails the schema');
  t.equal(check('{"id":'), 'invalid', 'truncated JSON');
  t.equal(check('<html>oops</html>'), 'invalid', 'not JSON at all');
  t.equal(check(''), 'invalid', 'an empty 2xx body where JSON was promised');
  t.equal(check('\ufeff{"id":2}'), 'valid', 'a UTF-8 BOM is tolerated');
  t.equal(check('{"id":1,"name":"żółw 🐢"}', {}, undefined, 1), 'valid', 'multi-byte characters split across chunks');

  t.equal(check(gzipSync('{"id":3}'), { 'content-encoding': 'gzip' }), 'valid', 'gzip is decoded');
  t.equal(check(deflateSync('{"id":"x"}'), { 'content-encoding': 'deflate' }), 'invalid', 'deflate is decoded');
  t.equal(check(brotliCompressSync('{"id":4}'), { 'content-encoding': 'br' }), 'valid', 'br is decoded');
  t.equal(check(Buffer.from('not gzip'), { 'content-encoding': 'gzip' }), 'invalid', 'a corrupt encoding reaches the caller corrupt');
  t.equal(check('{"id":1}', { 'content-encoding': 'zstd' }), 'encoding', 'an unknown encoding is not checked');
  t.equal(check('{"id":1}', { 'content-encoding': 'gzip, br' }), 'encoding', 'stacked encodings are not checked');

  const big = JSON.stringify({ id: 1, pad: 'x'.repeat(SCHEMA_BODY_CAP_BYTES) });
  t.equal(check(big, {}, undefined, 64 * 1024), 'too_large', 'over the cap while streaming');
  t.equal(
    check('{"id":1}', { 'content-length': String(SCHEMA_BODY_CAP_BYTES + 1) }),
    'too_large',
    'over the cap by Content-Length: nothing kept',
  );
  t.equal(check('{"id":1}', {}, 8), 'valid', 'exactly at the cap is checked');
  t.equal(check('{"id":12}', {}, 8), 'too_large', 'one byte over is not');
  const bomb = gzipSync(JSON.stringify({ id: 1, pad: ' '.repeat(4 * SCHEMA_BODY_CAP_BYTES) }));
  t.ok(bomb.length < SCHEMA_BODY_CAP_BYTES, 'a small compressed body');
  t.equal(check(bomb, { 'content-encoding': 'gzip' }, undefined, 4096), 'too_large', 'decoded output is bounded by the cap');

  t.equal(verdictOf('valid'), 'valid');
  t.equal(verdictOf('invalid'), 'invalid');
  t.equal(verdictOf('too_large'), 'unchecked');
  t.equal(verdictOf('encoding'), 'unchecked');
});
