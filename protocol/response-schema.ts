/**
 * Response schemas (DESIGN §6, `schema_mismatch`): the JSON Schema subset an endpoint may
 * carry, checked by control when an operator stores it and compiled by the gateway into a
 * validator for 2xx JSON bodies.
 *
 * Supported keywords: `type` (a name or a list of names: object, array, string, number,
 * integer, boolean, null), `properties`, `required`, `items` (one schema for every element),
 * `enum`, `minimum`, `maximum`, `minLength`, `maxLength` (counted in Unicode code points).
 * Annotations (`$schema`, `$id`, `$comment`, `title`, `description`, `examples`, `default`)
 * are accepted and ignored. Any other keyword is refused when the schema is stored, so an
 * operator never believes a rule is enforced when it is not. As in JSON Schema, a keyword
 * constrains only values of its own type (`minLength` says nothing about a number).
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-validation
 */
import { z } from 'zod';

export const SCHEMA_TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
export type SchemaType = (typeof SCHEMA_TYPES)[number];

export const SCHEMA_KEYWORDS = ['type', 'properties', 'required', 'items', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength'] as const;
const ANNOTATIONS: ReadonlySet<string> = new Set(['$schema', '$id', '$comment', 'title', 'description', 'examples', 'default']);
const KEYWORDS: ReadonlySet<string> = new Set(SCHEMA_KEYWORDS);
const TYPES: ReadonlySet<string> = new Set(SCHEMA_TYPES);

/** Largest stored schema, serialised. @default 64 KiB */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Deepest nesting of `properties` / `items`. @default 32 */
export const MAX_SCHEMA_DEPTH = 32;

export interface JsonSchema {
  type?: SchemaType | SchemaType[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  [annotation: string]: unknown;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Everything wrong with `doc` as a response schema (empty when it is usable). */
export function schemaProblems(doc: unknown): string[] {
  const problems: string[] = [];
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(doc) ?? '');
  } catch {
    return ['is not a JSON value'];
  }
  if (size > MAX_SCHEMA_BYTES) return [`is ${size} bytes serialised; the limit is ${MAX_SCHEMA_BYTES}`];
  walk(doc, '#', 0, problems);
  return problems;
}

function walk(node: unknown, path: string, depth: number, problems: string[]): void {
  if (!isPlainObject(node)) {
    problems.push(`${path}: a schema must be a JSON object`);
    return;
  }
  if (depth > MAX_SCHEMA_DEPTH) {
    problems.push(`${path}: nested deeper than ${MAX_SCHEMA_DEPTH} levels`);
    return;
  }
  for (const [keyword, value] of Object.entries(node)) {
    if (ANNOTATIONS.has(keyword)) continue;
    if (!KEYWORDS.has(keyword)) {
      problems.push(`${path}: keyword "${keyword}" is not supported (supported: ${SCHEMA_KEYWORDS.join(', ')})`);
      continue;
    }
    const at = `${path}/${keyword}`;
    switch (keyword) {
      case 'type': {
        const list = Array.isArray(value) ? value : [value];
        if (list.length === 0 || !list.every((t) => typeof t === 'string' && TYPES.has(t)) || new Set(list).size !== list.length) {
          problems.push(`${at}: must be one of ${SCHEMA_TYPES.join(', ')}, or a non-empty list of distinct ones`);
        }
        break;
      }
      case 'properties':
        if (!isPlainObject(value)) problems.push(`${at}: must be an object of schemas`);
        else for (const [name, sub] of Object.entries(value)) walk(sub, `${at}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth + 1, problems);
        break;
      case 'required':
        if (!Array.isArray(value) || !value.every((v) => typeof v === 'string') || new Set(value).size !== value.length) {
          problems.push(`${at}: must be a list of distinct property names`);
        }
        break;
      case 'items':
        walk(value, at, depth + 1, problems);
        break;
      case 'enum':
        if (!Array.isArray(value) || value.length === 0) problems.push(`${at}: must be a non-empty list of values`);
        break;
      case 'minimum':
      case 'maximum':
        if (typeof value !== 'number' || !Number.isFinite(value)) problems.push(`${at}: must be a number`);
        break;
      case 'minLength':
      case 'maxLength':
        if (!isCount(value)) problems.push(`${at}: must be a whole number ≥ 0`);
        break;
    }
  }
}

/** A stored response schema: a JSON object using only the supported keywords. */
export const ResponseSchema = z
  .record(z.string(), z.unknown())
  .superRefine((doc, ctx) => {
    for (const message of schemaProblems(doc)) ctx.addIssue({ code: 'custom', message });
  })
  .transform((doc) => doc as JsonSchema);

/** Checks a parsed JSON value; returns null when it conforms, else where and why it does not. */
export type SchemaValidator = (value: unknown) => string | null;

type Check = (value: unknown) => string | null;

/** Unicode code points in `s` (JSON Schema's string length), not UTF-16 units. */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** A JSON value with object keys sorted, so equal values have equal text (for `enum`). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function typeOf(value: unknown): SchemaType | 'other' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isInteger(value) ? 'integer' : 'number';
    case 'object':
      return 'object';
    default:
      return 'other';
  }
}

const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

function compileNode(s: JsonSchema, path: string): Check {
  const checks: Check[] = [];
  if (s.type !== undefined) {
    const types = new Set<string>(Array.isArray(s.type) ? s.type : [s.type]);
    const label = [...types].join(' or ');
    checks.push((v) => {
      const t = typeOf(v);
      return types.has(t) || (t === 'integer' && types.has('number')) ? null : `${path}: expected ${label}, got ${t}`;
    });
  }
  if (s.enum !== undefined) {
    const allowed = new Set(s.enum.map(canonical));
    checks.push((v) => (allowed.has(canonical(v)) ? null : `${path}: not one of the allowed values`));
  }
  if (s.minimum !== undefined) {
    const min = s.minimum;
    checks.push((v) => (typeof v !== 'number' || v >= min ? null : `${path}: ${v} is below the minimum ${min}`));
  }
  if (s.maximum !== undefined) {
    const max = s.maximum;
    checks.push((v) => (typeof v !== 'number' || v <= max ? null : `${path}: ${v} is above the maximum ${max}`));
  }
  if (s.minLength !== undefined) {
    const min = s.minLength;
    checks.push((v) => (typeof v !== 'string' || codePointLength(v) >= min ? null : `${path}: shorter than ${min}`));
  }
  if (s.maxLength !== undefined) {
    const max = s.maxLength;
    checks.push((v) => (typeof v !== 'string' || codePointLength(v) <= max ? null : `${path}: longer than ${max}`));
  }
  if (s.required !== undefined && s.required.length > 0) {
    const required = s.required;
    checks.push((v) => {
      if (!isPlainObject(v)) return null;
      for (const name of required) if (!own(v, name)) return `${path}: missing required property ${JSON.stringify(name)}`;
      return null;
    });
  }
  if (s.properties !== undefined) {
    const props = Object.entries(s.properties).map(([name, sub]) => [name, compileNode(sub, `${path}/${name}`)] as const);
    checks.push((v) => {
      if (!isPlainObject(v)) return null;
      for (const [name, check] of props) {
        if (!own(v, name)) continue;
        const problem = check(v[name]);
        if (problem !== null) return problem;
      }
      return null;
    });
  }
  if (s.items !== undefined) {
    const item = compileNode(s.items, `${path}/*`);
    checks.push((v) => {
      if (!Array.isArray(v)) return null;
      for (const element of v) {
        const problem = item(element);
        if (problem !== null) return problem;
      }
      return null;
    });
  }
  if (checks.length === 0) return () => null;
  if (checks.length === 1) return checks[0]!;
  return (v) => {
    for (const check of checks) {
      const problem = check(v);
      if (problem !== null) return problem;
    }
    return null;
  };
}

/**
 * Compile a schema once into a validator. Throws when the schema uses anything outside the
 * supported subset (the gateway nacks such a snapshot; control never stores one).
 */
export function compileSchema(doc: unknown): SchemaValidator {
  const problems = schemaProblems(doc);
  if (problems.length > 0) throw new Error(`invalid response schema: ${problems[0]}`);
  return compileNode(doc as JsonSchema, '#');
}
