/**
 * The one place HTML is answered, for every page of {api_url} and {indexer_url}: the cached
 * pages (`sendPage`), the pages built per request (`sendHtml`: the application form and its
 * answers), and the error page a browser gets instead of problem+json (`problemPages`).
 * Each carries the one CSP (`contentSecurityPolicy`) with a nonce of its own.
 *
 * A cached page is built at most once per TTL like every public read
 * (`ResponseCache`), yet with a fresh CSP nonce in every response.
 *
 * A page is rendered once with `NONCE_PLACEHOLDER` on its `<style>`; each response writes a new
 * random nonce of the same length in its place and names it in its
 * `Content-Security-Policy` (the policy of `/apply`: nothing loads, only this response's
 * nonce may style or run). Since the bytes differ per response, the `ETag` is weak (`W/"…"`,
 * from the cached template): the representation is the same, byte equality is not promised.
 * A 304 carries no CSP: the client keeps the policy it stored with the body, whose nonce
 * matches that body (a new nonce in a 304 would replace the stored policy and unstyle it).
 *
 * Clients that accept gzip (every browser) get the page compressed once per TTL, the nonce in
 * a stored block of its own (`gzip.ts`): a page is several times the size of the JSON it
 * shows, and compressing per answer would cost more than everything else together. The gzip
 * answer is another representation: `Vary: Accept-Encoding` and its own ETag (`…-gz`).
 *
 * @see https://www.w3.org/TR/CSP3/#security-nonces · RFC 9110 §8.8.1 (weak validators) · RFC 9111 §4.3.4
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvariantError } from '../../protocol/coded-error';
import type { Problem } from '../../protocol/errors';
import type { ProblemResponder } from '../../runtime/http';
import { prefersHtml } from '../http/accept';
import { etagMatches, type ResponseCache } from '../http/cache';
import { acceptsGzip, gzipAnswer, gzipTemplate, type GzipTemplate } from './gzip';
import { NONCE_PLACEHOLDER, escapeHtml, renderDocument, type PageUrls } from './layout';

export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

/** Bytes of a nonce; 16 bytes are 24 base64 characters. */
const NONCE_BYTES = 16;
/** Nonces drawn from the CSPRNG at once: one `randomBytes` call costs about as much as the rest of an answer. */
const NONCE_BATCH = 256;

let noncePool = Buffer.alloc(0);
let nonceNext = 0;

/** A fresh nonce: 16 bytes from the CSPRNG, each used once, drawn 256 at a time. */
export function nextNonce(): string {
  if (nonceNext >= noncePool.length) {
    noncePool = randomBytes(NONCE_BYTES * NONCE_BATCH);
    nonceNext = 0;
  }
  const nonce = noncePool.toString('base64', nonceNext, nonceNext + NONCE_BYTES);
  nonceNext += NONCE_BYTES;
  return nonce;
}

/** The Content-Security-Policy of every page: nothing loads; only this answer's nonce may style or run. */
export function contentSecurityPolicy(nonce: string): string {
  // One template rather than a joined list: every page answer builds one.
  return `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;
}

export type { PageUrls };

/**
 * Headers of every page besides its CSP. Framing is refused by the CSP's `frame-ancestors
 * 'none'`, which browsers enforce in place of `X-Frame-Options` (CSP3 §6.4.2), and the
 * referrer policy is the document's own `<meta name="referrer">` (layout.ts): every header here
 * is paid for on every answer.
 */
const PAGE_HEADERS = {
  'x-content-type-options': 'nosniff',
  vary: 'Accept-Encoding',
} as const;

interface CachedPage {
  body: Buffer;
  etag: string;
  expiresAt: number;
  nonceAt?: number;
  gzip?: GzipTemplate;
}

/**
 * Answer `key` from `cache` (rendering it with `render` when missing or expired), with a new
 * nonce in the body and the CSP. `render` must put `NONCE_PLACEHOLDER` into the page exactly
 * where the nonce goes (once).
 */
export async function sendPage(
  req: IncomingMessage,
  res: ServerResponse,
  cache: ResponseCache,
  key: string,
  render: () => string | Promise<string>,
  now: () => number,
  vary: string = PAGE_HEADERS.vary,
): Promise<void> {
  const entry = (await cache.get(key, async () => {
    const body = Buffer.from(await render());
    const nonceAt = body.indexOf(NONCE_PLACEHOLDER);
    if (nonceAt < 0 || body.indexOf(NONCE_PLACEHOLDER, nonceAt + 1) >= 0)
      throw new InvariantError(`page ${key}: the nonce placeholder must appear exactly once`);
    const gzip = gzipTemplate(body, nonceAt, NONCE_PLACEHOLDER.length);
    return { body, contentType: HTML_CONTENT_TYPE, nonceAt, gzip } as { body: Buffer; contentType: string };
  })) as CachedPage;
  const gzip = acceptsGzip(req.headers['accept-encoding']);
  const etag = gzip ? `W/${entry.etag.slice(0, -1)}-gz"` : `W/${entry.etag}`;
  const headers: Record<string, string> = {
    'cache-control': `public, max-age=${Math.max(0, Math.ceil((entry.expiresAt - now()) / 1000))}`,
    etag,
    ...PAGE_HEADERS,
    vary,
  };
  if (etagMatches(req.headers['if-none-match'], etag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const nonce = nextNonce();
  headers['content-security-policy'] = contentSecurityPolicy(nonce);
  headers['content-type'] = HTML_CONTENT_TYPE;
  // One buffer, one write (as the JSON reads do): a gather write of the parts costs more than copying them.
  let body: Buffer;
  if (gzip) {
    body = gzipAnswer(entry.gzip!, nonce);
    headers['content-encoding'] = 'gzip';
  } else {
    body = Buffer.from(entry.body);
    body.write(nonce, entry.nonceAt!, 'latin1');
  }
  headers['content-length'] = String(body.length);
  res.writeHead(200, headers);
  res.end(body);
}

/**
 * A page built for this answer alone (not cached: `no-store`), e.g. the application form with
 * what was typed. `render` gets the answer's nonce for its `<style>` (and `<script>`).
 */
export function sendHtml(
  res: ServerResponse,
  status: number,
  render: (nonce: string) => string,
  headers: Record<string, string> = {},
): void {
  const nonce = nextNonce();
  const body = render(nonce);
  res.writeHead(status, {
    'content-type': HTML_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(body)),
    'content-security-policy': contentSecurityPolicy(nonce),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(body);
}

/** The error page: the status and its title, the error code, what went wrong, and the ways back. */
export function renderProblemPage(problem: Problem, urls: PageUrls, nonce: string): string {
  return renderDocument(
    {
      title: `${problem.status} ${problem.title} — svc`,
      current: null,
      urls,
      main: `<h1>${problem.status} ${escapeHtml(problem.title)}</h1>
<p class="lede">${escapeHtml(problem.detail)}</p>
<dl><dt>status</dt><dd>${problem.status}</dd><dt>error code</dt><dd><code id="error-code">${escapeHtml(problem.code)}</code></dd></dl>
<p><a href="${escapeHtml(urls.api)}/" id="back">Back to the svc home page</a> · <a href="${escapeHtml(urls.api)}/status">status</a></p>`,
    },
    nonce,
  );
}

/**
 * What answers a listener's problems: an HTML page when the request comes from a browser
 * (`prefersHtml`: its `Accept` ranks `text/html` above JSON and `*\/*`), else nothing, so
 * programs keep problem+json. The page keeps the problem's status and headers (`Allow`,
 * `Retry-After`, …). Made once per listener; `answerProblemsWith(res, it)` for each request,
 * before any step that may refuse it (rate limit, User-Agent filter, routing, handler).
 */
export function problemPages(urls: () => PageUrls): ProblemResponder {
  return (res, problem, headers) => {
    if (!prefersHtml(res.req.headers.accept)) return false;
    sendHtml(res, problem.status, (nonce) => renderProblemPage(problem, urls(), nonce), { vary: 'Accept', ...headers });
    return true;
  };
}
