/**
 * Response schemas (docs/design.md §6, `schema_mismatch`): the JSON Schema (draft 2020-12) an
 * endpoint may carry, checked by control when an operator stores it and compiled by the
 * gateway into a validator for 2xx JSON bodies. Validation is Ajv's (`ajv/dist/2020`), with
 * the `format` names of ajv-formats asserted.
 *
 * The whole of draft 2020-12 is accepted, with these rules so that what control stores is
 * exactly what every gateway compiles:
 *
 * - The schema is a JSON object of at most {@link MAX_SCHEMA_BYTES} serialised, nested at
 *   most {@link MAX_SCHEMA_DEPTH} levels.
 * - It must be valid against the 2020-12 meta-schema; a `$schema` naming another draft is
 *   refused.
 * - Ajv's strict mode is on for keywords: an unknown keyword, or an unknown `format`, is
 *   refused rather than ignored, so an operator never believes a rule is enforced when it is
 *   not. (Strict typing is off: `{"minLength": 1}` without `"type"` is ordinary JSON Schema.)
 * - `$ref` resolves inside the schema only (`#/$defs/...`, `$anchor`, a nested `$id`);
 *   nothing is fetched, and one endpoint's schema never sees another's. `$async` is refused.
 * - Properties are own properties: `required: ["toString"]` is not met by `{}`.
 * - Schemas stored before Ajv keep compiling on the gateway, with the annotations the old
 *   subset ignored left out when the meta-schema refuses them ({@link compileSchema}).
 *
 * Each schema compiles in an Ajv instance of its own (no meta-schemas, about a millisecond);
 * one shared instance only checks schemas against the meta-schema.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-core
 * @see https://ajv.js.org/json-schema.html
 */
import Ajv2020, { type ErrorObject, type Options } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { CodedError } from './coded-error';

/** Largest stored schema, serialised. @default 64 KiB */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/**
 * Deepest nesting of JSON objects and arrays in a stored schema; room for the 32 levels of
 * `properties` the schemas stored before Ajv could have (65 levels of JSON). @default 128
 */
export const MAX_SCHEMA_DEPTH = 128;

/** A response schema: a JSON object (JSON Schema draft 2020-12). */
export type JsonSchema = Record<string, unknown>;

/** Checks a parsed JSON value; returns null when it conforms, else where and why it does not. */
export type SchemaValidator = (value: unknown) => string | null;

const OPTIONS: Options = {
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  ownProperties: true,
  allErrors: false,
  logger: false,
};

/** The `$schema` values that name draft 2020-12 (the only draft accepted). */
const DRAFT_2020_12_URI = 'https://json-schema.org/draft/2020-12/schema';
const DRAFT_2020_12: ReadonlySet<unknown> = new Set([DRAFT_2020_12_URI, `${DRAFT_2020_12_URI}#`]);

let metaChecker: Ajv2020 | null = null;

/** The one instance that holds the meta-schemas, built on first use (its first check compiles them). */
function checker(): Ajv2020 {
  if (metaChecker === null) {
    metaChecker = new Ajv2020(OPTIONS);
    addFormats(metaChecker);
  }
  return metaChecker;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function deeperThan(node: unknown, limit: number): boolean {
  if (node === null || typeof node !== 'object') return false;
  if (limit === 0) return true;
  for (const child of Object.values(node)) if (deeperThan(child, limit - 1)) return true;
  return false;
}

const describe = (e: ErrorObject): string => `#${e.instancePath}: ${e.message ?? e.keyword}`;

/** Compile `doc` on its own, or say what is wrong with it. */
function build(doc: unknown): { validate: SchemaValidator } | { problems: string[] } {
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(doc) ?? '');
  } catch {
    return { problems: ['is not a JSON value'] };
  }
  if (size > MAX_SCHEMA_BYTES) return { problems: [`is ${size} bytes serialised; the limit is ${MAX_SCHEMA_BYTES}`] };
  if (!isPlainObject(doc)) return { problems: ['#: a response schema must be a JSON object'] };
  if (deeperThan(doc, MAX_SCHEMA_DEPTH)) return { problems: [`#: nested deeper than ${MAX_SCHEMA_DEPTH} levels`] };
  if (doc.$async !== undefined) return { problems: ['#: "$async" is not supported (a response is checked synchronously)'] };
  if (doc.$schema !== undefined && !DRAFT_2020_12.has(doc.$schema)) {
    return { problems: [`#/$schema: only draft 2020-12 is supported (${DRAFT_2020_12_URI})`] };
  }
  const meta = checker();
  let validate: ReturnType<Ajv2020['compile']>;
  try {
    if (!meta.validateSchema(doc)) return { problems: (meta.errors ?? []).map(describe) };
    const ajv = new Ajv2020({ ...OPTIONS, meta: false, validateSchema: false, addUsedSchema: false });
    addFormats(ajv);
    validate = ajv.compile(doc);
  } catch (err) {
    // Ajv throws for what the meta-schema cannot see: unknown keywords and formats, bad
    // regular expressions, references that resolve to nothing.
    return { problems: [(err as Error).message] };
  }
  // The last error is the outermost: `oneOf` rather than the first branch's `type`.
  return { validate: (value) => (validate(value) ? null : describe(validate.errors![validate.errors!.length - 1]!)) };
}

/** Everything wrong with `doc` as a response schema (empty when it is usable). */
export function schemaProblems(doc: unknown): string[] {
  const built = build(doc);
  return 'problems' in built ? built.problems : [];
}

/** A stored response schema: a JSON object that compiles as JSON Schema 2020-12 under the rules above. */
export const ResponseSchema = z
  .record(z.string(), z.unknown())
  .superRefine((doc, ctx) => {
    for (const message of schemaProblems(doc)) ctx.addIssue({ code: 'custom', message });
  })
  .transform((doc) => doc as JsonSchema);

/** The keywords of the subset stored before Ajv; it ignored these annotations without checking them. */
const LEGACY_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
]);
const LEGACY_ANNOTATIONS: ReadonlySet<string> = new Set(['$schema', '$id', '$comment', 'title', 'description', 'examples', 'default']);

/** `node` without its annotations when it is a schema of the pre-Ajv subset, else null. */
function withoutLegacyAnnotations(node: unknown): Record<string, unknown> | null {
  if (!isPlainObject(node)) return null;
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (LEGACY_ANNOTATIONS.has(keyword)) continue;
    if (!LEGACY_KEYWORDS.has(keyword)) return null;
    if (keyword === 'items') {
      const item = withoutLegacyAnnotations(value);
      if (item === null) return null;
      out.items = item;
    } else if (keyword === 'properties') {
      if (!isPlainObject(value)) return null;
      const properties: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(value)) {
        const property = withoutLegacyAnnotations(sub);
        if (property === null) return null;
        properties[name] = property;
      }
      out.properties = properties;
    } else {
      out[keyword] = value;
    }
  }
  return out;
}

/**
 * Compile a schema control stored, once, into a validator. Throws when it does not compile
 * (the gateway nacks such a snapshot).
 *
 * One allowance keeps schemas stored before Ajv working: a schema of the old subset (`type`,
 * `properties`, `required`, `items`, `enum`, `minimum`, `maximum`, `minLength`, `maxLength`)
 * whose annotations the 2020-12 meta-schema refuses (a draft-07 `$schema`, a `title` that is
 * not a string, `examples` that is not a list) compiles without those annotations, which the
 * old validator ignored too; it enforces exactly what it did before. Control refuses such a
 * schema when it is stored now ({@link ResponseSchema}), so only old rows take this path.
 */
export class ResponseSchemaError extends CodedError {
  override readonly code = 'SVC_ERR_RESPONSE_SCHEMA';
}

export function compileSchema(doc: unknown): SchemaValidator {
  const built = build(doc);
  if ('validate' in built) return built.validate;
  const legacy = withoutLegacyAnnotations(doc);
  const retried = legacy === null ? null : build(legacy);
  if (retried !== null && 'validate' in retried) return retried.validate;
  throw new ResponseSchemaError(`invalid response schema: ${built.problems[0]}`);
}
