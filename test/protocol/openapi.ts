/**
 * The OpenAPI documents (`protocol/openapi/`): each is valid OpenAPI 3.1, the committed
 * `docs/openapi/*.json` are what the generator writes now, every error answer is problem+json
 * with a `code` enum from the catalogue, every 429 carries the rate-limit headers, every
 * operation names its security, every document its license, the public API's operations the
 * User-Agent rule, and a `{batch}` is an integer.
 */
import t from 'tap';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PUBLIC_USER_AGENT_EXEMPT_PATHS } from '../../config/defaults';
import { ERROR_CODES, ERRORS } from '../../protocol/errors';
import { DOCUMENT_NAMES, renderDocument } from '../../protocol/openapi';
import { USER_AGENT_EXEMPT_PATHS } from '../../protocol/openapi/public';
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
        const extensions = codes.includes('svc_payment_required') ? ['required', 'available', 'account_id'] : [];
        t.same(schema.required, ['type', 'title', 'status', 'detail', 'code', ...extensions], 'RFC 9457 members and code are required');
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

t.test('every document states the license of package.json', async (t) => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { license: string };
  for (const name of DOCUMENT_NAMES) {
    t.same((currentDocument(name).info as Json).license, { name: pkg.license }, `${name}: info.license`);
  }
});

t.test('the public API documents its User-Agent rule on every operation but the exempt ones', async (t) => {
  t.same(
    [...USER_AGENT_EXEMPT_PATHS],
    DEFAULT_PUBLIC_USER_AGENT_EXEMPT_PATHS.split(','),
    'the exempt paths are the default of public.userAgentExemptPaths',
  );
  const doc = currentDocument('public');
  const ops = operations(doc);
  t.ok(ops.length > 10);
  for (const { method, path, op } of ops) {
    const ua = ((op.parameters as Json[] | undefined) ?? []).find(
      (p) => p.in === 'header' && String(p.name).toLowerCase() === 'user-agent',
    );
    if (USER_AGENT_EXEMPT_PATHS.includes(path)) {
      t.equal(ua, undefined, `${method.toUpperCase()} ${path}: exempt, no User-Agent rule`);
    } else {
      t.match(
        ua,
        { required: true, schema: { type: 'string' }, description: /svc-monitor-sdk\/<semver>.*svc_forbidden_user_agent/ },
        `${method.toUpperCase()} ${path}`,
      );
    }
  }
  for (const name of DOCUMENT_NAMES.filter((n) => n !== 'public')) {
    const named = operations(currentDocument(name)).filter(({ op }) =>
      ((op.parameters as Json[] | undefined) ?? []).some((p) => String(p.name).toLowerCase() === 'user-agent'),
    );
    t.same(named, [], `${name}: no User-Agent rule (no filter there)`);
  }
});

t.test('a {batch} path parameter is an integer in every document', async (t) => {
  let seen = 0;
  for (const name of DOCUMENT_NAMES) {
    for (const { path, op } of operations(currentDocument(name))) {
      if (!path.includes('{batch}')) continue;
      const param = ((op.parameters as Json[] | undefined) ?? []).find((p) => p.in === 'path' && p.name === 'batch');
      t.match(param, { required: true, schema: { type: 'integer', minimum: 1 } }, `${name} ${path}`);
      seen++;
    }
  }
  t.ok(seen >= 2, 'the indexer receipt and the admin reissue');
});
