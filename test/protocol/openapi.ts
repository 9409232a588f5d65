/**
 * The OpenAPI documents (`protocol/openapi/`): each is valid OpenAPI 3.1, the committed
 * `docs/openapi/*.json` are what the generator writes now, every error answer is problem+json
 * with a `code` enum from the catalogue, every 429 carries the rate-limit headers, and every
 * operation names its security.
 */
import t from 'tap';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ERROR_CODES, ERRORS } from '../../protocol/errors';
import { DOCUMENT_NAMES, renderDocument } from '../../protocol/openapi';
import { committedDocument, currentDocument, validateOpenApi, type Doc } from '../fixtures/openapi';

type Json = Record<string, any>;

const resolveRef = (doc: Doc, node: Json): Json =>
  typeof node.$ref === 'string'
    ? node.$ref
        .slice(2)
        .split('/')
        .reduce((n: Json, k: string) => n[k.replace(/~1/g, '/')], doc as Json)
    : node;

/** Every operation of a document, with its method and path (webhooks included). */
function operations(doc: Doc): { method: string; path: string; op: Json }[] {
  const items = [...Object.entries(doc.paths), ...Object.entries((doc.webhooks as Record<string, Json> | undefined) ?? {})];
  return items.flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op: op as Json })));
}

t.test('each document is valid OpenAPI 3.1', async (t) => {
  for (const name of DOCUMENT_NAMES) {
    const doc = currentDocument(name);
    t.equal(doc.openapi, '3.1.1', `${name}: openapi 3.1.1`);
    const result = await validateOpenApi(doc);
    t.ok(result.valid, `${name}: valid${result.valid ? '' : `: ${JSON.stringify(result.errors).slice(0, 2000)}`}`);
  }
  // The validator does refuse a broken document (so the checks above can fail).
  const broken = currentDocument('indexer') as Json;
  delete broken.info;
  t.notOk((await validateOpenApi(broken)).valid, 'a document without info is refused');
  const badRef = currentDocument('public') as Json;
  badRef.paths['/health'].get.responses['200'] = { content: {} };
  t.notOk((await validateOpenApi(badRef)).valid, 'a response without a description is refused');
});

t.test('docs/openapi/*.json are what `npm run openapi` writes now', async (t) => {
  for (const name of DOCUMENT_NAMES) {
    const fresh = renderDocument(name);
    let committed: string;
    try {
      committed = committedDocument(name);
    } catch {
      t.fail(`docs/openapi/${name}.json is missing: run npm run openapi`);
      continue;
    }
    t.ok(committed === fresh, `docs/openapi/${name}.json is up to date (run npm run openapi after changing protocol/)`);
  }
});

t.test('every error answer is problem+json whose code enum comes from the catalogue', async (t) => {
  const documented = new Set<string>();
  for (const name of DOCUMENT_NAMES) {
    const doc = currentDocument(name);
    for (const { method, path, op } of operations(doc)) {
      for (const [status, ref] of Object.entries(op.responses as Json)) {
        const response = resolveRef(doc, ref as Json);
        // Errors are problem+json; a JSON answer with an error status (the gateway's 503 /health) is its own shape.
        const problem = response.content?.['application/problem+json'];
        if (Number(status) >= 400 && !problem && !response.content?.['application/json']) {
          t.fail(`${name}: ${method.toUpperCase()} ${path} ${status} has no problem+json body`);
          continue;
        }
        if (!problem) continue;
        const schema = resolveRef(doc, problem.schema as Json);
        const codes: string[] = schema.properties.code.enum;
        t.ok(
          codes.length > 0 && codes.every((c) => (ERROR_CODES as readonly string[]).includes(c)),
          `${name}: ${method.toUpperCase()} ${path} ${status}: codes from the catalogue`,
        );
        t.ok(
          codes.every((c) => String(ERRORS[c as keyof typeof ERRORS].status) === status),
          `${name}: ${method.toUpperCase()} ${path} ${status}: each code has that status`,
        );
        t.same(schema.required, ['type', 'title', 'status', 'detail', 'code'], 'RFC 9457 members and code are required');
        for (const c of codes) documented.add(c);
        if (codes.includes('svc_rate_limited')) {
          for (const h of ['Retry-After', 'RateLimit', 'RateLimit-Policy']) {
            t.equal(
              resolveRef(doc, response.headers?.[h] ?? {}).schema !== undefined,
              true,
              `${name}: ${method.toUpperCase()} ${path} 429 documents ${h}`,
            );
          }
        }
      }
    }
  }
  t.same([...documented].sort(), [...ERROR_CODES].sort(), 'every catalogue code is documented on some operation');
});

t.test('every operation names its security, and bearer schemes are declared', async (t) => {
  const bearer: Record<string, string[]> = {
    public: ['betaKey'],
    indexer: [],
    admin: ['adminToken', 'syncToken', 'metricsToken'],
    gateway: ['betaKey', 'metricsToken'],
  };
  for (const name of DOCUMENT_NAMES) {
    const doc = currentDocument(name);
    const schemes: Json = (doc.components as Json).securitySchemes ?? {};
    t.same(Object.keys(schemes).sort(), [...bearer[name]!].sort(), `${name}: security schemes`);
    for (const s of Object.values<Json>(schemes)) t.match(s, { type: 'http', scheme: 'bearer' }, `${name}: bearer`);
    for (const { method, path, op } of operations(doc)) {
      t.ok(Array.isArray(op.security) && op.security.length > 0, `${name}: ${method.toUpperCase()} ${path} has security`);
      const names = (op.security as Json[]).flatMap((s) => Object.keys(s));
      if (path.startsWith('/_admin/')) t.same(names, ['adminToken'], `${path} needs the admin token`);
      if (path.startsWith('/_sync/')) t.same(names, ['syncToken'], `${path} needs the sync token`);
      if (names.some((n) => n !== 'betaKey')) t.ok(op.responses['401'], `${name}: ${method.toUpperCase()} ${path} documents 401`);
    }
  }
});

t.test('every schema in the documents compiles as JSON Schema 2020-12', async (t) => {
  for (const name of DOCUMENT_NAMES) {
    const doc = currentDocument(name);
    const ajv = new Ajv2020({ strict: true, strictRequired: false });
    addFormats(ajv);
    ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'paths', 'webhooks', 'components']);
    ajv.addSchema(doc, 'https://svc.invalid/openapi.json');
    for (const id of Object.keys(doc.components.schemas)) {
      t.doesNotThrow(() => ajv.getSchema(`https://svc.invalid/openapi.json#/components/schemas/${id}`), `${name}: ${id} compiles`);
    }
  }
});
