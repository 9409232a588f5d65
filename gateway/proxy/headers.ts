/**
 * Header hygiene in both directions (docs/design.md §3.4).
 *
 * Both functions build a fresh header object from Node's `rawHeaders` instead of cleaning
 * the incoming one: a header reaches the other side only by passing the filter here. One
 * pass over the raw list, one Set lookup per header, no regular expressions per header.
 *
 * @see RFC 9110 §7.6.1 (Connection, hop-by-hop fields)
 * @see RFC 9112 §6 (message framing)
 */
import type { OutgoingHttpHeaders } from 'node:http';

/** Hop-by-hop fields (RFC 9110 §7.6.1, plus the historical `Keep-Alive` and `Proxy-Connection`). */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/**
 * Request fields never forwarded upstream. Credentials are the caller's (the endpoint injects
 * its own); forwarding fields are the gateway's to set; `Host` is the upstream's; `Expect` is
 * answered by the gateway's own server; `HTTP2-Settings` only makes sense with `Upgrade`.
 */
export const REQUEST_DROP: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'authorization',
  'cookie',
  'host',
  'forwarded',
  'x-real-ip',
  'true-client-ip',
  'expect',
  'http2-settings',
]);

/**
 * Response fields never passed back to the caller. `Alt-Svc` would let the upstream
 * redirect the gateway's own origin; `X-Svc-*` are the gateway's headers and cannot be
 * spoofed by an upstream. `RateLimit`/`RateLimit-Policy` are the gateway's per-caller limit;
 * the upstream's describe the endpoint credential all callers share.
 */
export const RESPONSE_DROP: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'set-cookie',
  'server',
  'x-powered-by',
  'alt-svc',
  'ratelimit',
  'ratelimit-policy',
]);

/** Prefixes dropped from requests (`Proxy-*`, client `X-Forwarded-*`). */
const REQUEST_DROP_PREFIXES = ['proxy-', 'x-forwarded-'] as const;
/** Prefixes dropped from responses. */
const RESPONSE_DROP_PREFIXES = ['proxy-', 'x-svc-'] as const;

/**
 * Framing survives `Connection: content-length`: removing it would leave a body without a
 * length, which the next hop reads as the start of another request.
 */
const NEVER_CONNECTION_NOMINATED = 'content-length';

export interface UpstreamHeaderOptions {
  /** The caller's socket address: the only value `X-Forwarded-For` carries. */
  clientAddress: string;
  /** Scheme the caller used to reach the gateway. */
  proto: 'http' | 'https';
  /** `Host` for the upstream: the endpoint URL's `host` (hostname, plus port if not default). */
  host: string;
  /** The endpoint's injected headers (e.g. its upstream credential); they win over the caller's. */
  inject?: Readonly<Record<string, string>> | undefined;
}

const COMMON_CONNECTION: ReadonlySet<string> = new Set(['keep-alive', 'Keep-Alive', 'close', 'Close']);

/**
 * Lower-cased field names listed by the given `Connection` field values (other than `close`,
 * `keep-alive` and `content-length`), or null when there are none.
 */
export function nominatedFields(values: readonly string[]): Set<string> | null {
  let tokens: Set<string> | null = null;
  for (const value of values) {
    if (COMMON_CONNECTION.has(value)) continue; // the usual single `keep-alive` or `close`
    for (const part of value.split(',')) {
      const token = part.trim().toLowerCase();
      // `close` and `keep-alive` name no field we would keep; most messages carry only those.
      if (token === '' || token === 'close' || token === 'keep-alive' || token === NEVER_CONNECTION_NOMINATED) continue;
      (tokens ??= new Set()).add(token);
    }
  }
  return tokens;
}

/** {@link nominatedFields} of every `Connection` field in a raw header list. */
export function connectionTokens(raw: readonly string[]): Set<string> | null {
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'connection') values.push(raw[i + 1]!);
  return nominatedFields(values);
}

/** Remove the fields that `Connection` values nominate; most messages nominate none. */
function dropNominated(out: OutgoingHttpHeaders, values: readonly string[]): void {
  const named = nominatedFields(values);
  if (named !== null) for (const name of named) delete out[name];
}

function hasPrefix(name: string, prefixes: readonly string[]): boolean {
  for (const prefix of prefixes) if (name.startsWith(prefix)) return true;
  return false;
}

/**
 * Per-direction cache: raw field name → its lower-case form, or null when the name is always
 * dropped. Field names repeat across messages, so the hot path is one Map lookup per field.
 */
class NameFilter {
  private readonly cache = new Map<string, string | null>();
  constructor(
    private readonly drop: ReadonlySet<string>,
    private readonly prefixes: readonly string[],
  ) {}

  /** Lower-case name if the field may pass, else null. */
  pass(raw: string): string | null {
    let verdict = this.cache.get(raw);
    if (verdict === undefined) {
      const name = raw.toLowerCase();
      verdict = this.drop.has(name) || hasPrefix(name, this.prefixes) ? null : name;
      if (this.cache.size >= NAME_CACHE_LIMIT) this.cache.clear();
      this.cache.set(raw, verdict);
    }
    return verdict;
  }
}

const NAME_CACHE_LIMIT = 4096;
const requestNames = new NameFilter(REQUEST_DROP, REQUEST_DROP_PREFIXES);
const responseNames = new NameFilter(RESPONSE_DROP, RESPONSE_DROP_PREFIXES);

// Header objects without Object.prototype in their chain (a field named `constructor` or
// `__proto__` is just a field), yet in V8's fast property mode, unlike Object.create(null).
const HeaderBag = function HeaderBag(this: OutgoingHttpHeaders) {} as unknown as new () => OutgoingHttpHeaders;
HeaderBag.prototype = Object.create(null) as object;

function add(out: OutgoingHttpHeaders | Record<string, string | string[]>, name: string, value: string): void {
  const existing = out[name];
  if (existing === undefined) out[name] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else out[name] = [String(existing), value];
}

/**
 * Headers for the upstream request, built from the caller's `req.rawHeaders`.
 *
 * Dropped: {@link REQUEST_DROP}, `Proxy-*`, `X-Forwarded-*`, and every field the caller's
 * `Connection` names. Set: `Host`, `X-Forwarded-For` (the socket address only, never the
 * caller's chain), `X-Forwarded-Proto`, then the endpoint's injected headers.
 *
 * Framing: `Content-Length` is kept; a chunked caller body is re-framed as
 * `Transfer-Encoding: chunked` on the upstream hop, so a body is never sent without a length.
 */
export function upstreamRequestHeaders(raw: readonly string[], options: UpstreamHeaderOptions): OutgoingHttpHeaders {
  const out = new HeaderBag();
  let chunked = false;
  let connection: string[] | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const rawName = raw[i]!;
    const name = requestNames.pass(rawName);
    if (name === null) {
      if (rawName.length === 17 && rawName.toLowerCase() === 'transfer-encoding') chunked = true;
      else if (rawName.length === 10 && rawName.toLowerCase() === 'connection') (connection ??= []).push(raw[i + 1]!);
      continue;
    }
    add(out, name, raw[i + 1]!);
  }
  if (connection !== null) dropNominated(out, connection);
  if (chunked && out['content-length'] === undefined) out['transfer-encoding'] = 'chunked';
  out['host'] = options.host;
  out['x-forwarded-for'] = options.clientAddress;
  out['x-forwarded-proto'] = options.proto;
  if (options.inject !== undefined) {
    for (const name in options.inject) out[name.toLowerCase()] = options.inject[name]!;
  }
  return out;
}

/**
 * A flat header list, `[name, value, name, value, …]` with lower-case names: the form
 * `res.writeHead()` takes without building (and walking) an object per response.
 */
export type HeaderList = string[];

/** The values of `name` (lower-case) in a header list, joined with `,`; undefined when absent. */
export function headerListValue(list: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < list.length; i += 2) {
    if (list[i] === name) value = value === undefined ? list[i + 1]! : `${value},${list[i + 1]!}`;
  }
  return value;
}

/** A header list as an object (repeated names become arrays), for the rare paths that need one. */
export function headerListObject(list: readonly string[]): Record<string, string | string[]> {
  const out = new HeaderBag() as Record<string, string | string[]>;
  for (let i = 0; i < list.length; i += 2) add(out, list[i]!, list[i + 1]!);
  return out;
}

/**
 * Headers for the caller, built from the upstream response's `rawHeaders`, as a
 * {@link HeaderList} the gateway appends its own headers to.
 *
 * Dropped: {@link RESPONSE_DROP}, `Proxy-*`, `X-Svc-*`, and every field the upstream's
 * `Connection` names. `Transfer-Encoding` is the hop's business: Node frames the body to the
 * caller itself. Repeated fields stay repeated, in order.
 */
export function clientResponseHeaders(raw: readonly string[]): HeaderList {
  const out: HeaderList = [];
  let connection: string[] | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = responseNames.pass(raw[i]!);
    if (name === null) {
      if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') (connection ??= []).push(raw[i + 1]!);
      continue;
    }
    out.push(name, raw[i + 1]!);
  }
  const named = connection === null ? null : nominatedFields(connection);
  if (named === null) return out;
  const kept: HeaderList = [];
  for (let i = 0; i < out.length; i += 2) if (!named.has(out[i]!)) kept.push(out[i]!, out[i + 1]!);
  return kept;
}
