/**
 * Request and response plumbing: request bodies, response bodies by media type, header
 * records, the gateway's `x-svc-*` fields, and URL checks. No I/O of its own.
 */
import type { Outcome } from './generated/wire';

/** The `fetch` the SDK calls: the global one, or a wrapper with the same contract. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** What `new Headers(…)` accepts: a record, `[name, value]` pairs or a `Headers`. */
export type HeadersLike = ConstructorParameters<typeof Headers>[0];

/**
 * A call body: bytes, text, form data and blobs are sent as they are; any other value is
 * sent as JSON (`Content-Type: application/json` unless the caller set one). Streams are
 * refused: a call must be replayable to be retried.
 */
export function encodeBody(body: unknown, headers: Headers): RequestInit['body'] | undefined {
  if (body === undefined) return undefined;
  if (
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof Blob ||
    body instanceof URLSearchParams ||
    body instanceof FormData
  ) {
    return body as RequestInit['body'];
  }
  if (body instanceof ReadableStream || (typeof body === 'object' && body !== null && Symbol.asyncIterator in body)) {
    throw new TypeError('streamed bodies are not supported: pass a string, bytes, a Blob or a JSON value');
  }
  const json = JSON.stringify(body);
  if (json === undefined) throw new TypeError('body is not JSON-serialisable');
  if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  return json;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const TEXT_TYPE = /^(?:text\/|application\/(?:[\w.+-]+\+)?xml\s*(?:;|$)|application\/(?:javascript|x-www-form-urlencoded)\s*(?:;|$))/i;

/**
 * A response body by its media type: JSON (`application/json`, `*+json`) parsed (the text when
 * it does not parse), text types as a string, anything else as bytes; null when empty.
 */
export function decodeBody(bytes: Uint8Array, contentType: string | null): unknown {
  if (bytes.length === 0) return null;
  const type = contentType ?? '';
  if (JSON_TYPE.test(type)) {
    const text = new TextDecoder().decode(bytes);
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (TEXT_TYPE.test(type)) return new TextDecoder().decode(bytes);
  return bytes;
}

/** Response headers as a plain object with lower-case names. */
export function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** What the gateway says about an admitted call, from its `x-svc-*` response headers. */
export interface SvcFields {
  /** `X-Svc-Call-Id` (UUIDv7). */
  callId: string | null;
  /** `X-Svc-Outcome`: the verdict known when the head was sent. */
  outcome: Outcome | null;
  /** `X-Svc-Refund`: micro-units to be refunded before clamping (0 when none). */
  refund: number | null;
  /** `X-Svc-Premium`: micro-units of premium to be charged (0 when none). */
  premium: number | null;
  /** `X-Svc-Latency-Ms`: the provider's latency as the gateway measured it. */
  latencyMs: number | null;
}

function integer(value: string | null): number | null {
  return value !== null && /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : null;
}

export function svcFields(headers: Headers): SvcFields {
  const outcome = headers.get('x-svc-outcome');
  return {
    callId: headers.get('x-svc-call-id'),
    outcome: outcome === null || outcome === '' ? null : (outcome as Outcome),
    refund: integer(headers.get('x-svc-refund')),
    premium: integer(headers.get('x-svc-premium')),
    latencyMs: integer(headers.get('x-svc-latency-ms')),
  };
}

/** A base URL option: http(s), kept without trailing slashes. The value is not echoed. */
export function baseUrl(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${name} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`${name} must be an absolute http(s) URL`);
  if (url.search !== '' || url.hash !== '') throw new TypeError(`${name} must not have a query or fragment`);
  return url.href.replace(/\/+$/, '');
}

/** Endpoint ids as the gateway registers them. */
const ENDPOINT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * `{gateway}/v1/<endpoint>/<path>`. `path` (with its query) is kept as written, apart from one
 * leading `/`; a path that URL parsing would move out of the endpoint (`../other`) is refused
 * here rather than sent to another endpoint.
 */
export function gatewayTarget(gateway: string, endpoint: string, path: string): string {
  if (typeof endpoint !== 'string' || !ENDPOINT_ID.test(endpoint)) {
    throw new TypeError('endpoint must be an endpoint id: 1 to 63 of a-z 0-9 _ -, starting with a letter or digit');
  }
  if (typeof path !== 'string') throw new TypeError('path must be a string');
  const prefix = `${gateway}/v1/${endpoint}/`;
  const target = prefix + path.replace(/^\//, '');
  const parsed = new URL(target);
  if (!parsed.href.startsWith(prefix)) throw new TypeError(`path leaves the endpoint ${endpoint}`);
  return target;
}
