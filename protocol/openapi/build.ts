/**
 * Builds an OpenAPI 3.1 document from a table of operations whose bodies, answers and
 * parameters are the zod schemas of `protocol/`. Nothing in a document is written by hand:
 * schemas come from `z.toJSONSchema` (JSON Schema 2020-12, the dialect OpenAPI 3.1 uses), error
 * answers from the catalogue in `protocol/errors.ts`.
 *
 * Named answer schemas become `components.schemas` (referenced with `$ref`); request bodies and
 * parameters are rendered inline as what the server accepts (`io: 'input'`), answers as what
 * it sends (`io: 'output'`: objects list every member and allow no others).
 *
 * The table's shapes (operations, answers, parameters) are `operation.ts`.
 *
 * @see https://spec.openapis.org/oas/v3.1.1.html
 */
import { z } from 'zod';
import { InvariantError } from '../coded-error';
import { ERRORS, FieldError, PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE, ProblemSchema, type ErrorCode } from '../errors';
import { CALL_HEADERS } from '../gateway';
import type { DocumentSpec, HeaderName, JsonObject, Named, Operation, SchemeName } from './operation';

/** The API version every listener serves (the `v1` of `/v1/…` and of `{"version":"v1"}`). */
export const API_VERSION = 'v1';

/**
 * The project's license as every document states it (`info.license`): `license` in the
 * repository's package.json, which test/protocol/openapi.ts checks it against. `UNLICENSED` is
 * npm's word for no licence granted (all rights reserved); it is not an SPDX identifier, so
 * it goes in `name`.
 */
export const LICENSE = { name: 'UNLICENSED' } as const;

const SCHEMES: Readonly<Record<SchemeName, { description: string; bearerFormat: string }>> = {
  adminToken: {
    description:
      "Root's token (the bootstrap admin token: `data/admin.token` or `SVC_ADMIN_TOKEN`; every scope) or an operator's (`svc_op_…`; its scopes).",
    bearerFormat: 'opaque token',
  },
  syncToken: { description: 'The sync token gateways use: `data/sync.token` or `SVC_SYNC_TOKEN`.', bearerFormat: 'opaque token' },
  metricsToken: { description: 'The metrics token: `data/metrics.token` or `SVC_METRICS_TOKEN`.', bearerFormat: 'opaque token' },
  betaKey: { description: 'A beta API key (`svc_beta_` + base58). Required while `beta_gate_enabled` is on.', bearerFormat: 'svc_beta_…' },
};

/** One of the gateway's call headers, with the description its schema carries. */
function callHeader(name: keyof typeof CALL_HEADERS): { description: string; schema: z.ZodType } {
  const schema = CALL_HEADERS[name];
  return { description: schema.description ?? name, schema };
}

const HEADERS: Readonly<Record<HeaderName, { description: string; schema: z.ZodType }>> = {
  RateLimit: {
    description:
      'What is left of the caller\'s limit: `"<policy>";r=<remaining>;t=<seconds until reset>` (IETF draft-ietf-httpapi-ratelimit-headers-11).',
    schema: z.string(),
  },
  'RateLimit-Policy': {
    description: 'The limit that applies: `"<policy>";q=<quota>;w=<window seconds>` (IETF draft-ietf-httpapi-ratelimit-headers-11).',
    schema: z.string(),
  },
  'Retry-After': { description: 'Seconds to wait before retrying (an integer ≥ 1).', schema: z.string().regex(/^[1-9][0-9]*$/) },
  Allow: { description: 'The methods this resource accepts.', schema: z.string() },
  Link: {
    description: 'Where the caller sees and funds its account: `</api/v1/account>; rel="account"` (on the public read API).',
    schema: z.string(),
  },
  'WWW-Authenticate': { description: 'The bearer realm that refused the request.', schema: z.string() },
  'Cache-Control': { description: '`public, max-age=<seconds left>` on cached public reads.', schema: z.string() },
  ETag: {
    description:
      'Validator of the answer (strong; weak `W/"…"` on HTML pages, whose CSP nonce differs per answer); send it back as `If-None-Match` to get 304.',
    schema: z.string(),
  },
  Location: {
    description: 'Where to go next: the thank-you page after a form submission, or the page a root path redirects to.',
    schema: z.string(),
  },
  'X-Svc-Call-Id': callHeader('x-svc-call-id'),
  'X-Svc-Outcome': callHeader('x-svc-outcome'),
  'X-Svc-Latency-Ms': callHeader('x-svc-latency-ms'),
  'X-Svc-Coverage': callHeader('x-svc-coverage'),
  'X-Svc-Premium': callHeader('x-svc-premium'),
  'X-Svc-Refund': callHeader('x-svc-refund'),
  'X-Svc-Settlement-Pending': {
    description: '`1` on calls to priced endpoints (price or premium > 0): the money moves when the settler runs.',
    schema: z.literal('1'),
  },
  'X-Svc-Beat-Ms': {
    description:
      'How often control writes a `beat` line to this stream, in milliseconds; a gateway that hears nothing for 3 beats takes control for hung.',
    schema: z.string().regex(/^[1-9][0-9]*$/),
  },
};

/** Which headers a problem answer with `code` always carries. */
const ERROR_HEADERS: Partial<Record<ErrorCode, readonly HeaderName[]>> = {
  svc_rate_limited: ['Retry-After', 'RateLimit', 'RateLimit-Policy'],
  svc_payment_required: ['Link'],
  svc_method_not_allowed: ['Allow'],
  svc_unauthorized: ['WWW-Authenticate'],
  svc_store_unavailable: ['Retry-After'],
};

/** A JSON Schema for `schema`, without the `$schema`/`$id` members component schemas must not carry. */
function strip(schema: JsonObject): JsonObject {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

function inputSchema(schema: z.ZodType): JsonObject {
  return strip(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
}

/** The problem+json schema of one HTTP status: `status`, `code`, `title` and `type` narrowed to the codes given. */
function problemSchema(status: number, codes: readonly ErrorCode[]): z.ZodType {
  const enumOf = (values: string[]) => z.enum(values as [string, ...string[]]);
  const shape = ProblemSchema.extend({
    type: enumOf([...new Set(codes.map((c) => PROBLEM_TYPE_BASE + c))]),
    title: enumOf([...new Set(codes.map((c) => ERRORS[c].title))]),
    status: z.literal(status),
    code: enumOf([...codes]),
  });
  if (codes.includes('svc_bad_request'))
    return shape.extend({ errors: z.array(FieldError).optional().describe('each invalid field, on validation failures') });
  if (codes.includes('svc_payment_required'))
    return shape.extend({
      required: z.number().int().min(1).describe("the endpoint's premium: what the call needs (integer micro-units)"),
      available: z.number().int().min(0).describe('what this gateway holds of the account for prepaid calls now (micro-units)'),
      account_id: z.string().describe("the key's account (`acc_…`): deposit into it, then retry"),
    });
  return shape;
}

export class DocumentBuilder {
  private readonly registry = z.registry<{ id: string }>();
  private readonly names = new Map<z.ZodType, string>();
  private readonly responses: Record<string, JsonObject> = {};
  private readonly problemSchemas: Record<string, JsonObject> = {};
  private readonly usedHeaders = new Set<HeaderName>();

  /** `$ref` to the component `name` (registering it on first use). */
  private ref(named: Named): JsonObject {
    const entries = Object.entries(named);
    if (entries.length !== 1) throw new InvariantError('name exactly one schema: { Name: schema }');
    const [name, schema] = entries[0]!;
    const known = this.names.get(schema);
    if (known !== undefined && known !== name) throw new InvariantError(`schema registered as ${known} and ${name}`);
    if (known === undefined) {
      if ([...this.names.values()].includes(name)) throw new InvariantError(`two schemas named ${name}`);
      this.names.set(schema, name);
      this.registry.add(schema, { id: name });
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** Register schemas that answers nest, so they are shared components rather than inlined. */
  share(named: Named): void {
    for (const [name, schema] of Object.entries(named)) this.ref({ [name]: schema });
  }

  /** Header map of an answer: optional ones by `$ref`, required ones inline (a `$ref` takes no `required` beside it). */
  private headers(names: readonly HeaderName[] = [], required: readonly HeaderName[] = []): JsonObject | undefined {
    if (names.length === 0 && required.length === 0) return undefined;
    const out: JsonObject = {};
    for (const name of new Set([...required, ...names])) {
      if (required.includes(name)) {
        out[name] = { ...this.headerObject(name), required: true };
      } else {
        this.usedHeaders.add(name);
        out[name] = { $ref: `#/components/headers/${name}` };
      }
    }
    return out;
  }

  private headerObject(name: HeaderName): JsonObject {
    const h = HEADERS[name];
    const { description: _d, ...schema } = strip(z.toJSONSchema(h.schema, { io: 'output' }));
    return { description: h.description, schema };
  }

  /** `components.responses` entry for the problem answers of one status. */
  private problemResponse(status: number, codes: readonly ErrorCode[], extraHeaders: readonly HeaderName[]): JsonObject {
    const name = `${[...codes].sort().join('-or-')}${extraHeaders.length ? `-with-${[...extraHeaders].sort().join('-')}` : ''}`;
    if (this.responses[name] === undefined) {
      const always = [...new Set(codes.flatMap((c) => ERROR_HEADERS[c] ?? []))];
      const description = codes.map((c) => `\`${c}\`: ${ERRORS[c].when}`).join(' · ');
      const headers = this.headers(
        extraHeaders.filter((h) => !always.includes(h)),
        always,
      );
      const schemaName = `Problem.${[...codes].sort().join('.')}`;
      this.problemSchemas[schemaName] ??= strip(z.toJSONSchema(problemSchema(status, codes), { io: 'output' }));
      this.responses[name] = {
        description,
        ...(headers ? { headers } : {}),
        content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: `#/components/schemas/${schemaName}` } } },
      };
    }
    return { $ref: `#/components/responses/${name}` };
  }

  operation(op: Operation): JsonObject {
    const responses: Record<string, unknown> = {};
    for (const a of op.answers) {
      const headers = this.headers(a.headers, a.requiredHeaders);
      const content = a.json
        ? { 'application/json': { schema: this.ref(a.json) } }
        : a.content
          ? { [a.content.type]: a.content.schema ? { schema: this.outputInline(a.content.schema) } : {} }
          : undefined;
      responses[String(a.status)] = { description: a.description, ...(headers ? { headers } : {}), ...(content ? { content } : {}) };
    }
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of op.errors) {
      const status = ERRORS[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      const extra = [...new Set(codes.flatMap((c) => op.errorHeaders?.[c] ?? []))];
      const problem = this.problemResponse(status, codes, extra);
      const answer = responses[String(status)] as JsonObject | undefined;
      if (answer === undefined) {
        responses[String(status)] = problem;
        continue;
      }
      // The same status is also an ordinary answer (e.g. a form shown again with 400): one
      // response with both bodies, told apart by their content types.
      // A header only one of the two bodies always has is optional for the response as a whole.
      const problemName = (problem.$ref as string).split('/').pop()!;
      const p = this.responses[problemName]!;
      const names = [
        ...Object.keys((p.headers as JsonObject | undefined) ?? {}),
        ...Object.keys((answer.headers as JsonObject | undefined) ?? {}),
      ];
      const headers = this.headers(names as HeaderName[]);
      const merged = {
        description: `${answer.description as string}; or problem+json: ${p.description as string}`,
        ...(headers ? { headers } : {}),
        content: { ...(answer.content as JsonObject | undefined), ...(p.content as JsonObject) },
      };
      const shared = op.answers.find((a) => a.status === status)?.shared;
      if (shared === undefined) {
        responses[String(status)] = merged;
      } else {
        const name = `${problemName}-or-${shared}`;
        this.responses[name] ??= merged;
        responses[String(status)] = { $ref: `#/components/responses/${name}` };
      }
    }

    const sortedResponses = Object.fromEntries(
      Object.keys(responses)
        .sort()
        .map((k) => [k, responses[k]]),
    );
    const parameters: JsonObject[] = [];
    for (const p of op.params ?? []) {
      parameters.push({
        name: p.name,
        in: p.in,
        required: p.in === 'path' ? true : p.required === true,
        description: p.description,
        schema: inputSchema(p.schema),
      });
    }
    if (op.query) {
      const shape = op.query.shape as Record<string, z.ZodType>;
      const rendered = inputSchema(op.query) as { properties?: Record<string, JsonObject>; required?: string[] };
      for (const name of Object.keys(shape)) {
        const schema = rendered.properties?.[name] ?? {};
        const { description, ...rest } = schema as { description?: string };
        parameters.push({
          name,
          in: 'query',
          required: rendered.required?.includes(name) ?? false,
          ...(description ? { description } : {}),
          schema: rest,
        });
      }
    }

    const security = op.security.map((s) => (s === 'none' ? {} : { [s]: [] }));
    return {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      security,
      ...(parameters.length ? { parameters } : {}),
      ...(op.body
        ? {
            requestBody: {
              required: op.body.required ?? true,
              ...(op.body.description ? { description: op.body.description } : {}),
              content: Object.fromEntries(
                (op.body.contentTypes ?? ['application/json']).map((t) => [t, { schema: inputSchema(op.body!.schema) }]),
              ),
            },
          }
        : {}),
      responses: sortedResponses,
      ...(op.extensions ?? {}),
    };
  }

  private outputInline(schema: z.ZodType): JsonObject {
    return strip(z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }));
  }

  /** Component schemas: every named answer, with `$ref`s between them. */
  private schemas(): Record<string, JsonObject> {
    const { schemas } = z.toJSONSchema(this.registry, { io: 'output', uri: (id) => `#/components/schemas/${id}` }) as {
      schemas: Record<string, JsonObject>;
    };
    const all: Record<string, JsonObject> = { ...this.problemSchemas };
    for (const [k, v] of Object.entries(schemas)) all[k] = strip(v);
    return Object.fromEntries(
      Object.keys(all)
        .sort()
        .map((k) => [k, all[k]!]),
    );
  }

  build(spec: DocumentSpec): JsonObject {
    const paths: Record<string, Record<string, JsonObject>> = {};
    const ids = new Set<string>();
    for (const op of spec.operations) {
      if (ids.has(op.operationId)) throw new InvariantError(`operationId ${op.operationId} used twice`);
      ids.add(op.operationId);
      const item = (paths[op.path] ??= {});
      if (item[op.method] !== undefined) throw new InvariantError(`${op.method.toUpperCase()} ${op.path} described twice`);
      item[op.method] = this.operation(op);
    }
    const webhooks = spec.webhooks
      ? Object.fromEntries(Object.entries(spec.webhooks).map(([name, op]) => [name, { [op.method]: this.operation(op) }]))
      : undefined;
    const headers = Object.fromEntries([...this.usedHeaders].sort().map((h) => [h, this.headerObject(h)]));
    return {
      openapi: '3.1.1',
      info: { title: spec.title, version: API_VERSION, description: spec.description, license: { ...LICENSE } },
      servers: [{ url: '/', description: spec.server.description }],
      tags: spec.tags,
      paths,
      ...(webhooks ? { webhooks } : {}),
      components: {
        schemas: this.schemas(),
        responses: Object.fromEntries(
          Object.keys(this.responses)
            .sort()
            .map((k) => [k, this.responses[k]]),
        ),
        headers,
        ...(spec.schemes.length
          ? {
              securitySchemes: Object.fromEntries(
                spec.schemes.map((s) => [
                  s,
                  { type: 'http', scheme: 'bearer', bearerFormat: SCHEMES[s].bearerFormat, description: SCHEMES[s].description },
                ]),
              ),
            }
          : {}),
      },
    };
  }
}

/** Build one document from its spec. */
export function buildDocument(spec: DocumentSpec, shared: Named = {}): JsonObject {
  const builder = new DocumentBuilder();
  builder.share(shared);
  return builder.build(spec);
}
