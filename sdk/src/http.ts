/**
 * Request and response plumbing: request bodies, response bodies by media type, header
 * records, and URL checks. No I/O of its own. A bad argument is an `svc_sdk_config` error.
 */
import { configError } from './errors';

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
    throw configError('streamed bodies are not supported: pass a string, bytes, a Blob or a JSON value');
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(body);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw configError('body is not JSON-serialisable');
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

/** A base URL option: http(s), kept without trailing slashes. The value is not echoed. */
export function baseUrl(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw configError(`${name} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw configError(`${name} must be an absolute http(s) URL`);
  if (url.search !== '' || url.hash !== '') throw configError(`${name} must not have a query or fragment`);
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
    throw configError('endpoint must be an endpoint id: 1 to 63 of a-z 0-9 _ -, starting with a letter or digit');
  }
  if (typeof path !== 'string') throw configError('path must be a string');
  const prefix = `${gateway}/v1/${endpoint}/`;
  const target = prefix + path.replace(/^\//, '');
  let parsed: URL;
  try {
    parsed = new URL(target);
  } catch {
    throw configError('path does not make a URL');
  }
  if (!parsed.href.startsWith(prefix)) throw configError(`path leaves the endpoint ${endpoint}`);
  return target;
}
