/**
 * Compiled response schemas, one per distinct schema, shared by every state this gateway
 * builds. A schema is compiled (Ajv, protocol/response-schema.ts; about a millisecond) when
 * the snapshot or delta that carries it is applied, never per call, and only when no
 * endpoint already uses the same schema: the key is the schema's RFC 8785 canonical JSON, so
 * the same schema with its members in another order is the same entry. After a state is
 * built or a delta applied, validators no endpoint of that state uses are dropped.
 */
import { canonicalize, type JsonValue } from '../../protocol/jcs';
import { compileSchema, type SchemaValidator } from '../../protocol/response-schema';

/** The cache key of a schema: its canonical JSON (its plain JSON text when JCS refuses it, e.g. a lone surrogate). */
function keyOf(doc: Record<string, unknown>): string {
  try {
    return canonicalize(doc as JsonValue);
  } catch {
    return `json:${JSON.stringify(doc)}`;
  }
}

export class SchemaCache {
  private readonly compiled = new Map<string, SchemaValidator>();

  /** The validator for `doc`, compiled now unless an equal schema already was. Throws when `doc` does not compile. */
  validator(doc: Record<string, unknown>): SchemaValidator {
    const key = keyOf(doc);
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      validate = compileSchema(doc);
      this.compiled.set(key, validate);
    }
    return validate;
  }

  /** Drop every validator not in `inUse`. */
  retain(inUse: ReadonlySet<SchemaValidator>): void {
    for (const [key, validate] of this.compiled) if (!inUse.has(validate)) this.compiled.delete(key);
  }
}

/** The gateway's one cache: every state of this process compiles through it. */
export const responseSchemas = new SchemaCache();
