/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form of a JSON value that is
 * hashed or signed. Objects have their members sorted by the UTF-16 code units of their
 * names, no whitespace is written, strings are escaped as ECMAScript's `JSON.stringify`
 * escapes them and numbers are written as ECMAScript writes them (RFC 8785 §3.2.2).
 *
 * Settlement leaves and receipts hold only strings, integers and null, so their canonical
 * form is plain; the general rules are implemented anyway so that any verifier's output
 * can be compared byte for byte. Input outside I-JSON (RFC 7493) is refused rather than
 * guessed at: non-finite numbers, strings with lone surrogates, `undefined`, functions,
 * symbols and bigints throw `TypeError`.
 *
 * Zod-free and dependency-free (node:crypto is not even needed): the receipts verifier and
 * the SDK ship this file as it is.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8785
 */

/** A JSON value as JCS takes it. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [name: string]: JsonValue };

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function serializeString(s: string): string {
  if (LONE_SURROGATE.test(s)) throw new TypeError('JCS: a string holds a lone UTF-16 surrogate (not I-JSON)');
  return JSON.stringify(s);
}

/** UTF-16 code unit order (RFC 8785 §3.2.3), which is what `<` on JS strings compares. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function serialize(value: unknown, out: string[]): void {
  if (value === null) {
    out.push('null');
    return;
  }
  switch (typeof value) {
    case 'string':
      out.push(serializeString(value));
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`JCS: ${value} is not a JSON number`);
      // ECMAScript Number::toString, which RFC 8785 §3.2.2.3 adopts (-0 is written 0).
      out.push(JSON.stringify(value));
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'object': {
      if (Array.isArray(value)) {
        out.push('[');
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.push(',');
          serialize(value[i], out);
        }
        out.push(']');
        return;
      }
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) throw new TypeError('JCS: only plain objects, arrays and primitives are JSON');
      const record = value as Record<string, unknown>;
      const names = Object.keys(record).sort(byCodeUnits);
      out.push('{');
      for (let i = 0; i < names.length; i++) {
        const name = names[i]!;
        if (i > 0) out.push(',');
        out.push(serializeString(name), ':');
        serialize(record[name], out);
      }
      out.push('}');
      return;
    }
    default:
      throw new TypeError(`JCS: a ${typeof value} is not a JSON value`);
  }
}

/** The canonical JSON text of `value` (RFC 8785). Throws `TypeError` for non-I-JSON input. */
export function canonicalize(value: JsonValue): string {
  const out: string[] = [];
  serialize(value, out);
  return out.join('');
}

/** The canonical bytes of `value`: the UTF-8 of `canonicalize(value)` (RFC 8785 §3.2.4). */
export function canonicalBytes(value: JsonValue): Buffer {
  return Buffer.from(canonicalize(value), 'utf8');
}
