/**
 * What an endpoint may be, wherever one is named or stored: its id (and the ids the gateway
 * keeps for itself), its methods, its upstream URL, the headers it injects upstream and its
 * public display name. The admin API's endpoint requests and views (`admin.ts`), the snapshot
 * (`snapshot.ts`) and the gateway's routing build on these.
 */
import { z } from 'zod';
import { forbiddenCharacter, forbiddenCharacterMessage, plainString } from './text';

/** First path segments the gateway keeps for itself (docs/design.md §3). */
export const RESERVED_ENDPOINT_IDS: readonly string[] = ['v1', 'health', 'metrics'];
export const ENDPOINT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export const HttpMethod = z.enum(HTTP_METHODS);
export type HttpMethod = z.infer<typeof HttpMethod>;

/** Request headers an endpoint may not inject: they are the gateway's or hop-by-hop. */
const FORBIDDEN_INJECTED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
  'cookie',
]);
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Header values are Latin-1 (RFC 9110 field-value; control characters are refused separately). */
// eslint-disable-next-line no-control-regex -- the range is Latin-1 itself, control characters included
const HEADER_VALUE_PATTERN = /^[\x00-\xff]*$/;

export const EndpointId = z
  .string()
  .regex(ENDPOINT_ID_PATTERN, {
    message: 'must match [a-z0-9][a-z0-9_-]{0,62}: lowercase letters, digits, "_" and "-", up to 63 characters',
  })
  .refine((id) => !RESERVED_ENDPOINT_IDS.includes(id), {
    message: `is reserved (${RESERVED_ENDPOINT_IDS.join(', ')})`,
  });

/** The scheme and `//` an upstream URL must start with, as typed. */
const UPSTREAM_PREFIX = /^https?:\/\//i;
/** `user@` or `user:pass@` (even empty) before the host, as typed. */
const UPSTREAM_USERINFO = /^[a-z]+:\/\/[^/?#\\]*@/i;

/**
 * An upstream base URL: absolute `http://` or `https://`, no credentials, query, fragment or
 * dot segments. The raw string is checked before `new URL` parses it, because the WHATWG parser
 * silently drops tabs and CR/LF, trims spaces, turns `\` into `/` and resolves `.`, `..` and
 * `%2e%2e` segments: what is stored is what was typed, so it must already be clean.
 */
export const UpstreamUrl = z.string().superRefine((value, ctx) => {
  const ch = forbiddenCharacter(value, 'line');
  if (ch !== null) {
    ctx.addIssue({ code: 'custom', message: forbiddenCharacterMessage(ch, 'line') });
    return;
  }
  if (/\s/.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'must not contain spaces; percent-encode them (%20)' });
    return;
  }
  if (value.includes('\\')) {
    ctx.addIssue({ code: 'custom', message: 'must not contain a backslash; use /' });
    return;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be an absolute http:// or https:// URL' });
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    ctx.addIssue({ code: 'custom', message: `scheme ${url.protocol} is not allowed; use http:// or https://` });
    return;
  }
  if (!UPSTREAM_PREFIX.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'must be an absolute http:// or https:// URL' });
    return;
  }
  if (url.username !== '' || url.password !== '' || UPSTREAM_USERINFO.test(value)) {
    ctx.addIssue({ code: 'custom', message: 'must not carry credentials (user:pass@); use --header to inject them' });
  }
  if (value.includes('?') || value.includes('#')) {
    ctx.addIssue({ code: 'custom', message: 'must not have a query string or fragment' });
  }
  if (hasDotSegment(rawPath(value))) {
    ctx.addIssue({ code: 'custom', message: 'must not contain dot segments (. or .., also percent-encoded as %2e)' });
  }
});

/**
 * A `.` or `..` path segment, as the gateway refuses it in a call's path and as an upstream
 * URL may not hold it: also `..;jsessionid` (`..` to servlet containers) and look-alikes that
 * NFKC folds into dots (`．．`, `‥`). Percent-decoding is the caller's: each decoded layer is
 * checked on its own.
 */
export function isDotSegment(segment: string): boolean {
  const semi = segment.indexOf(';');
  const bare = semi === -1 ? segment : segment.slice(0, semi);
  if (bare === '.' || bare === '..') return true;
  if (bare.length <= 4 && /[\u0080-\uffff]/.test(bare)) {
    const folded = bare.normalize('NFKC');
    return folded === '.' || folded === '..';
  }
  return false;
}

/** Percent-decoding layers of an upstream path checked for dot segments (`%252e` is two deep). */
const UPSTREAM_DECODE_LAYERS = 4;

/** The path of an upstream URL as typed: after `scheme://host`, before any `?` or `#`. */
function rawPath(value: string): string {
  const afterScheme = value.indexOf('//') + 2;
  const slash = value.indexOf('/', afterScheme);
  if (slash === -1) return '';
  const end = value.slice(slash).search(/[?#]/);
  return end === -1 ? value.slice(slash) : value.slice(slash, slash + end);
}

/**
 * Whether `path` (as typed) has a dot segment in it or in any of its percent-decoded layers.
 * `new URL` resolves raw and `%2e` dot segments away, so the check runs on the typed text: what
 * is stored is what was typed, and an upstream that decodes once more must not walk up either.
 */
function hasDotSegment(path: string): boolean {
  let layer = path;
  for (let depth = 0; depth <= UPSTREAM_DECODE_LAYERS; depth++) {
    if (layer.split(/[/\\]/).some(isDotSegment)) return true;
    const decoded = percentDecode(layer);
    if (decoded === layer) return false;
    layer = decoded;
  }
  return false;
}

/** One layer of percent-decoding; a run that is not UTF-8 is decoded byte by byte (Latin-1). */
function percentDecode(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run.replace(/%([0-9a-f]{2})/gi, (_, byte: string) => String.fromCharCode(parseInt(byte, 16)));
    }
  });
}

export const InjectedHeaders = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME_PATTERN.test(name)) {
      ctx.addIssue({ code: 'custom', message: `header name ${JSON.stringify(name)} is not a valid token` });
    } else if (FORBIDDEN_INJECTED_HEADERS.has(name.toLowerCase())) {
      ctx.addIssue({ code: 'custom', message: `header ${name} is set by the gateway and cannot be injected` });
    }
    const ch = forbiddenCharacter(value, 'line');
    if (ch !== null) {
      ctx.addIssue({ code: 'custom', message: `value of header ${name} ${forbiddenCharacterMessage(ch, 'line')}` });
    } else if (!HEADER_VALUE_PATTERN.test(value)) {
      ctx.addIssue({ code: 'custom', message: `value of header ${name} must be Latin-1 text` });
    }
  }
});

/** Most characters of an endpoint's display name. @default 80 */
export const DISPLAY_NAME_MAX = 80;

/**
 * The name the public pages show for an endpoint's provider (`Weather v2`): one line of plain
 * text, no control characters. Public: it must not name the upstream's URL or any secret.
 */
export const DisplayName = plainString().trim().min(1).max(DISPLAY_NAME_MAX);
