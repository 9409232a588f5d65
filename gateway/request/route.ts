/**
 * Gateway routing (docs/design.md §3.1): `/v1/<endpoint>/<upstream-path>` and
 * `/<endpoint>/<upstream-path>` name the same route, and the upstream path must stay under
 * the endpoint's base URL.
 *
 * The path is never resolved with `new URL(path, base)` or joined as text: it is checked
 * segment by segment in every decoding layer, then the raw (still encoded) suffix is appended
 * to the base path and the result is checked to start with that base path.
 */
import { ENDPOINT_ID_PATTERN, RESERVED_ENDPOINT_IDS, isDotSegment } from '../../protocol/endpoint';

/** A parsed gateway route, or the reason there is none. */
export type RouteResult =
  | {
      ok: true;
      endpointId: string;
      /** Raw path after the endpoint segment: `''`, or starting with `/`. Still percent-encoded. */
      suffix: string;
      /** Raw query string including its `?`, or `''`. */
      query: string;
    }
  | { ok: false; code: 'svc_bad_request' | 'svc_unknown_endpoint'; detail: string };

/** Decoding layers inspected before a suffix is accepted (`%25252e` is three layers deep). */
export const MAX_DECODE_LAYERS = 4;

/**
 * URL schemes that turn a first suffix segment such as `http:evil.example` into an absolute
 * URL for a lenient upstream parser. Other colons (`models/gemini-pro:generateContent`,
 * `projects:list`) are ordinary path characters and pass.
 */
const DANGEROUS_SCHEMES: ReadonlySet<string> = new Set([
  'http',
  'https',
  'ws',
  'wss',
  'ftp',
  'file',
  'data',
  'javascript',
  'vbscript',
  'blob',
  'about',
  'mailto',
  'gopher',
  'jar',
  'view-source',
  'ldap',
  'dict',
  'ssh',
  'smb',
  'tel',
]);

const SCHEME_ONLY_SEGMENT = /^[A-Za-z][A-Za-z0-9+.-]*:$/;
const SCHEME_PREFIX = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const ENCODED_SEPARATOR = /%(?:2f|5c)/i;
// Bytes a request target may carry unencoded: visible ASCII only (RFC 9112 §3.2).
const RAW_TARGET_OK = /^[\x21-\x7e]*$/;
// Control characters (C0, DEL, C1) in a decoded layer.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;

const RESERVED: ReadonlySet<string> = new Set([...RESERVED_ENDPOINT_IDS, 'v1', 'health', 'metrics']);

function bad(detail: string): RouteResult {
  return { ok: false, code: 'svc_bad_request', detail };
}

function unknown(detail: string): RouteResult {
  return { ok: false, code: 'svc_unknown_endpoint', detail };
}

/**
 * Parse a request target (`req.url`) into endpoint id, raw suffix and raw query.
 *
 * - Only origin-form targets (`/…`) are routes; absolute-form and `*` are `svc_bad_request`.
 * - The first segment `v1` is a version prefix when an endpoint follows it; `/v1` alone,
 *   `health`, `metrics` and `_`-prefixed segments are reserved (`svc_unknown_endpoint`).
 * - An endpoint segment that cannot be an endpoint id is `svc_unknown_endpoint`; it is not
 *   decoded, so `/%61pi/x` never reaches endpoint `api`.
 * - The suffix and query are checked with {@link checkSuffix} and {@link checkQuery}.
 */
export function parseRoute(rawUrl: string): RouteResult {
  if (rawUrl.length === 0 || rawUrl.charCodeAt(0) !== 0x2f /* / */) {
    return bad('request target must be an absolute path');
  }
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = q === -1 ? '' : rawUrl.slice(q);
  if (path.indexOf('//') !== -1) return bad('path contains an empty segment (//)');

  let start = 1;
  let end = segmentEnd(path, start);
  let first = path.slice(start, end);
  if (first === 'v1' && end < path.length) {
    start = end + 1;
    end = segmentEnd(path, start);
    first = path.slice(start, end);
  }
  if (first === '') return unknown('no endpoint in path');
  if (first.charCodeAt(0) === 0x5f /* _ */ || RESERVED.has(first)) return unknown(`${first} is reserved`);
  if (!ENDPOINT_ID_PATTERN.test(first)) return unknown('no such endpoint');

  const suffix = path.slice(end);
  const suffixProblem = checkSuffix(suffix);
  if (suffixProblem !== null) return bad(suffixProblem);
  const queryProblem = checkQuery(query);
  if (queryProblem !== null) return bad(queryProblem);
  return { ok: true, endpointId: first, suffix, query };
}

function segmentEnd(path: string, from: number): number {
  const slash = path.indexOf('/', from);
  return slash === -1 ? path.length : slash;
}

/**
 * Why `suffix` could escape or confuse the upstream base path, or null when it is safe.
 *
 * The raw suffix must be visible ASCII without `\`. It is then percent-decoded repeatedly
 * (at most {@link MAX_DECODE_LAYERS} times) and every layer, raw included, is rejected for:
 * `.` or `..` segments (also `..;x` and Unicode look-alikes), encoded `/` or `\`, `\`, empty
 * segments (`//`), `@`, control characters and NUL, segments of the form `scheme:` and a first
 * segment starting with a URL scheme from {@link DANGEROUS_SCHEMES}. Malformed
 * percent-encoding is rejected too.
 */
export function checkSuffix(suffix: string): string | null {
  if (suffix === '') return null;
  if (suffix.charCodeAt(0) !== 0x2f) return 'path suffix must start with /';
  if (isPlainPath(suffix)) return null;
  if (!RAW_TARGET_OK.test(suffix)) return 'path contains characters that must be percent-encoded';
  if (suffix.indexOf('#') !== -1) return 'request target contains a fragment';
  let layer = suffix;
  for (let depth = 0; ; depth++) {
    const problem = checkLayer(layer);
    if (problem !== null) return problem;
    if (layer.indexOf('%') === -1) return null;
    if (depth === MAX_DECODE_LAYERS) return 'path is percent-encoded too many times';
    let decoded: string;
    try {
      decoded = decodeURIComponent(layer);
    } catch {
      return 'path has malformed percent-encoding';
    }
    if (decoded === layer) return null;
    layer = decoded;
  }
}

/**
 * True for the common suffix made only of letters, digits, `-`, `_`, `~` and non-empty
 * `/`-separated segments: no `.`, `%`, `:`, `@` or `\\`, so no layer below it and nothing
 * {@link checkLayer} could object to. Everything else takes the full check.
 */
function isPlainPath(suffix: string): boolean {
  let previous = 0;
  for (let i = 0; i < suffix.length; i++) {
    const c = suffix.charCodeAt(i);
    if (c === 0x2f) {
      if (previous === 0x2f) return false;
    } else if (!(
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2d ||
      c === 0x5f ||
      c === 0x7e
    )) {
      return false;
    }
    previous = c;
  }
  return true;
}

function checkLayer(layer: string): string | null {
  if (CONTROL.test(layer)) return 'path contains control characters';
  if (layer.indexOf('\\') !== -1) return 'path contains a backslash';
  if (ENCODED_SEPARATOR.test(layer)) return 'path contains an encoded slash or backslash';
  if (layer.indexOf('@') !== -1) return 'path contains @';
  // layer starts with '/', so segments[0] is ''.
  const segments = layer.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    // An empty last segment is a trailing slash; anywhere else it is `//`.
    if (segment === '') {
      if (i === segments.length - 1) continue;
      return 'path contains an empty segment (//)';
    }
    if (isDotSegment(segment)) return 'path contains a dot segment';
    if (SCHEME_ONLY_SEGMENT.test(segment)) return 'path contains a URL scheme segment';
    if (i === 1) {
      const scheme = SCHEME_PREFIX.exec(segment);
      if (scheme !== null && DANGEROUS_SCHEMES.has(scheme[1]!.toLowerCase())) {
        return 'path looks like an absolute URL';
      }
    }
  }
  return null;
}

/** Why `query` (raw, with its `?`) cannot be forwarded as-is, or null when it can. */
export function checkQuery(query: string): string | null {
  if (query === '') return null;
  if (!RAW_TARGET_OK.test(query)) return 'query contains characters that must be percent-encoded';
  if (query.indexOf('#') !== -1) return 'request target contains a fragment';
  return null;
}

/**
 * The request path (pathname + search) to send to the upstream, for a suffix and query that
 * {@link parseRoute} accepted (it refuses what {@link checkSuffix} / {@link checkQuery} find):
 * the base URL's path, then the raw suffix, then the raw query. Returns null when the result
 * would not start with the base path. The base URL's own query and fragment are ignored
 * (endpoint URLs carry none).
 *
 * `base /api` + `''` → `/api`; `+ '/'` → `/api/`; `+ '/x'` → `/api/x`; base `/api/` + `/x` → `/api/x`.
 */
export function joinUpstreamPath(base: URL, suffix: string, query: string): string | null {
  const basePath = base.pathname === '' ? '/' : base.pathname;
  if (suffix === '') return basePath + query;
  const prefix = basePath.endsWith('/') ? basePath.slice(0, -1) : basePath;
  const path = prefix + suffix;
  if (!path.startsWith(prefix + '/')) return null;
  return path + query;
}
