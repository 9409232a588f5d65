/**
 * How a listener's operation table is written: each operation with its parameters, body,
 * answers and errors as zod schemas and catalogue codes, and the document around them.
 * `build.ts` renders a table into an OpenAPI 3.1 document.
 */
import type { z } from 'zod';
import type { ErrorCode } from '../errors';

export type JsonObject = { [key: string]: unknown };
export type Method = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch';

/** Bearer schemes a listener may use; `none` means no credentials are asked for. */
export type SchemeName = 'adminToken' | 'syncToken' | 'metricsToken' | 'betaKey';

/** A schema with the name it has in `components.schemas`, written `{ ProvidersAnswer }`. */
export type Named = Readonly<Record<string, z.ZodType>>;

/** Response headers every document may use, by their registered names. */
export type HeaderName =
  | 'RateLimit'
  | 'RateLimit-Policy'
  | 'Retry-After'
  | 'Allow'
  | 'Link'
  | 'WWW-Authenticate'
  | 'Cache-Control'
  | 'ETag'
  | 'Location'
  | 'X-Svc-Call-Id'
  | 'X-Svc-Outcome'
  | 'X-Svc-Latency-Ms'
  | 'X-Svc-Coverage'
  | 'X-Svc-Premium'
  | 'X-Svc-Refund'
  | 'X-Svc-Settlement-Pending'
  | 'X-Svc-Beat-Ms';

export interface Answer {
  /** HTTP status, or `default` for "whatever the upstream answered". */
  status: number | 'default';
  description: string;
  /** JSON body (`{ Name: schema }`), `text`/`html` for non-JSON bodies, or absent for none. */
  json?: Named;
  /** Content type and zod schema of a non-JSON body (text, HTML, NDJSON, anything). */
  content?: { type: string; schema?: z.ZodType; description?: string };
  headers?: readonly HeaderName[];
  /** Headers that are always present on this answer (the others may be). */
  requiredHeaders?: readonly HeaderName[];
  /** Name under which operations share this answer (with the error answers of its status) in `components.responses`. */
  shared?: string;
}

export interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header';
  schema: z.ZodType;
  description: string;
  required?: boolean;
}

export interface Operation {
  method: Method;
  /** OpenAPI path template (`/_admin/v1/keys/{id}`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Alternatives, any one of which is enough; `[]` is "no credentials". An empty entry makes credentials optional. */
  security: readonly (SchemeName | 'none')[];
  /** Query parameters from a zod object (rendered as input). */
  query?: z.ZodObject;
  params?: readonly Parameter[];
  body?: { schema: z.ZodType; contentTypes?: readonly string[]; description?: string; required?: boolean };
  answers: readonly Answer[];
  /** Catalogue codes this operation can answer with, as problem+json. */
  errors: readonly ErrorCode[];
  /** Problem answers also carry these headers (e.g. `Retry-After` on 503). */
  errorHeaders?: Partial<Record<ErrorCode, readonly HeaderName[]>>;
  /** OpenAPI specification extensions (`x-…`) of the operation, e.g. the admin API's `x-svc-scope`. */
  extensions?: Readonly<Record<`x-${string}`, unknown>>;
}

export interface DocumentSpec {
  title: string;
  description: string;
  /** The listener, for `servers`: its URL is `/`, relative to where the document is served. */
  server: { description: string };
  tags: readonly { name: string; description: string }[];
  schemes: readonly SchemeName[];
  operations: readonly Operation[];
  /** Requests this API sends to others (OpenAPI 3.1 `webhooks`). */
  webhooks?: Readonly<Record<string, Operation>>;
}
