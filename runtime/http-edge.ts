/**
 * What every listener answers before its request listener runs: requests Node's HTTP parser
 * refuses (`clientError`), `CONNECT` (the `connect` event), request targets that are not
 * origin-form (`GET http://host/x`, `OPTIONS *`), and an HTTP/1.1 request without `Host` or
 * any request with more than one. All of them leave as problem+json with a catalogue code,
 * like every other error (docs/design.md §9).
 *
 * Node answers parser errors itself only when no `clientError` listener exists, and then with
 * an empty body; without a `connect` listener it closes a CONNECT socket without a word; and
 * its own `Host` check (`requireHostHeader`) answers an empty 400, so every listener is created
 * with {@link EDGE_SERVER_OPTIONS}, which turns it off, and {@link edgeListener} answers instead.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9112#section-3.2 (request target forms, Host)
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */
import {
  STATUS_CODES,
  maxHeaderSize as NODE_MAX_HEADER_SIZE,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { ERRORS, PROBLEM_CONTENT_TYPE, problem, type ErrorCode } from '../protocol/errors';
import { sendProblem } from './http';

/** How long a refused connection may take to read our answer before it is cut. @default 2 s */
export const REFUSED_SOCKET_GRACE_MS = 2_000;

export interface EdgeOptions {
  /** The `Allow` value sent with the 405 to `CONNECT`: the methods this listener serves. */
  allow: string;
  /** Called once per refusal with its code (e.g. to count it in metrics). */
  onRefused?: (code: ErrorCode) => void;
}

/** What each llhttp / Node error code says, without echoing any of the caller's bytes. */
const PARSER_DETAILS: Readonly<Record<string, string>> = {
  HPE_INVALID_METHOD: 'malformed request method',
  HPE_INVALID_URL: 'malformed request target (spaces and control characters are not allowed)',
  HPE_INVALID_CONSTANT: 'malformed request line',
  HPE_INVALID_VERSION: 'malformed request line (HTTP version, or a line not ended by CRLF)',
  HPE_CR_EXPECTED: 'line not ended by CRLF',
  HPE_LF_EXPECTED: 'line not ended by CRLF',
  HPE_INVALID_HEADER_TOKEN: 'malformed header field (folded lines, bare LF and control characters are not allowed)',
  HPE_INVALID_CONTENT_LENGTH: 'invalid Content-Length',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'duplicate or unexpected Content-Length',
  HPE_INVALID_TRANSFER_ENCODING: 'invalid Transfer-Encoding, or Transfer-Encoding together with Content-Length',
  HPE_INVALID_CHUNK_SIZE: 'invalid chunk size',
};

/** The catalogue code and detail for an error Node raised while reading a request. */
export function parserErrorProblem(err: NodeJS.ErrnoException, maxHeaderBytes: number): { code: ErrorCode; detail: string } | null {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'svc_headers_too_large', detail: `the request line and header fields exceed ${maxHeaderBytes} bytes` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { code: 'svc_payload_too_large', detail: 'chunk extensions too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'svc_request_timeout', detail: 'the request was not received in time' };
  }
  if (typeof err.code === 'string' && err.code.startsWith('HPE_')) {
    return { code: 'svc_bad_request', detail: PARSER_DETAILS[err.code] ?? 'malformed HTTP request' };
  }
  return null; // a socket error (reset, EPIPE…): nobody is left to answer
}

/** The bytes of a complete problem+json response that closes the connection. */
export function rawProblem(code: ErrorCode, detail: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify(problem(code, detail));
  const status = ERRORS[code].status;
  let head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    `content-type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'cache-control: no-store\r\n' +
    'connection: close\r\n';
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return `${head}\r\n${body}`;
}

const answered = new WeakSet<Duplex>();

/**
 * Write `bytes` and close: FIN after the answer, then whatever the peer still sends is read
 * and dropped (closing with unread input would reset the connection and could discard the
 * answer), and the socket is destroyed when the peer closes or after the grace period.
 */
function answerAndClose(socket: Duplex, bytes: string): void {
  answered.add(socket);
  socket.on('error', () => socket.destroy());
  socket.on('end', () => socket.destroy());
  const cut = setTimeout(() => socket.destroy(), REFUSED_SOCKET_GRACE_MS);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
  socket.end(bytes);
  socket.resume();
}

/**
 * Install the `clientError` and `connect` answers on `server`:
 *
 * - a header section over the server's `maxHeaderSize` → 431 `svc_headers_too_large`;
 * - any other parser error (NUL or space in the request line, bare LF, obs-fold, CL+TE, a bad
 *   Content-Length, …) → 400 `svc_bad_request`;
 * - Node's `headersTimeout` / `requestTimeout` → 408 `svc_request_timeout`;
 * - `CONNECT` → 405 `svc_method_not_allowed` with `Allow`.
 *
 * Each answer is problem+json with `Connection: close`, and the connection is closed after it.
 * Nothing is written when a response on that connection has already started.
 */
export function answerParserErrors(server: Server, options: EdgeOptions): Server {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return; // the parser repeats its error for every later chunk
    const message = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    const answer = parserErrorProblem(err, (server as { maxHeaderSize?: number }).maxHeaderSize ?? NODE_MAX_HEADER_SIZE);
    if (answer === null || !socket.writable || message?.headersSent === true) {
      answered.add(socket);
      socket.destroy();
      return;
    }
    options.onRefused?.(answer.code);
    answerAndClose(socket, rawProblem(answer.code, answer.detail));
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    options.onRefused?.('svc_method_not_allowed');
    answerAndClose(
      socket,
      rawProblem('svc_method_not_allowed', 'CONNECT is not served here: this is not a forward proxy', { allow: options.allow }),
    );
  });
  return server;
}

/**
 * Options every listener's `http.Server` is created with. Node's own check of `Host`
 * (`requireHostHeader`) answers an empty 400 and misses a repeated `Host`; it is off, and
 * {@link edgeListener} answers both as problem+json.
 */
export const EDGE_SERVER_OPTIONS = { requireHostHeader: false } as const satisfies ServerOptions;

/** How many `Host` field lines the request head holds (Node's `req.headers.host` keeps only the first). */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

/** Why the request head is refused before any route sees it, or null when it is not. */
function edgeRefusal(req: IncomingMessage): string | null {
  if (req.url?.charCodeAt(0) !== 0x2f /* / */) return 'the request target must be a path starting with / (absolute-form is for proxies)';
  const hosts = hostLines(req.rawHeaders);
  if (hosts > 1) return 'more than one Host header field';
  if (hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) return 'an HTTP/1.1 request needs a Host header field';
  return null;
}

/**
 * Wrap a request listener so that only requests with a sound head reach it (RFC 9112 §3.2):
 *
 * - the target is origin-form (a path starting with `/`): absolute-form (`GET http://host/x`,
 *   what a forward proxy receives) and asterisk-form (`OPTIONS *`) are refused;
 * - an HTTP/1.1 request has a `Host` field (HTTP/1.0 needs none), and no request has two.
 *
 * A refused request gets 400 `svc_bad_request` with `Connection: close`, and the connection is
 * closed. The server must be created with {@link EDGE_SERVER_OPTIONS}, or Node answers a
 * missing `Host` itself before this runs.
 */
export function edgeListener(listener: RequestListener, onRefused?: (code: ErrorCode) => void): RequestListener {
  return (req, res) => {
    const refusal = edgeRefusal(req);
    if (refusal === null) {
      listener(req, res);
      return;
    }
    onRefused?.('svc_bad_request');
    req.resume();
    sendProblem(res, 'svc_bad_request', refusal, { connection: 'close' });
  };
}
