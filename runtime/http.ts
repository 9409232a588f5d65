/**
 * What every listener does with a request and its response: JSON and problem+json answers
 * written to the response, and a bounded JSON body reader. The shapes they carry (the error
 * catalogue, `Problem`) are `protocol/errors.ts`'s.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROBLEM_CONTENT_TYPE, SvcError, isSvcError, problem, type ErrorCode, type Problem } from '../protocol/errors';

/** Largest JSON body accepted by the admin and sync APIs. @default 1 MiB */
export const DEFAULT_JSON_BODY_LIMIT_BYTES = 1024 * 1024;

/** Any value but a promise: a body must be awaited before it is written. */
export type Settled<T> = T extends PromiseLike<unknown> ? never : T;

export function sendJson<T>(res: ServerResponse, status: number, body: Settled<T>, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(payload)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(payload);
}

/**
 * Answers a problem in another representation instead of problem+json (an HTML page for a
 * browser): it writes the whole answer and returns true, or returns false to leave it to
 * problem+json. `headers` are the problem's own (`Allow`, `Retry-After`, …).
 */
export type ProblemResponder = (res: ServerResponse, body: Problem, headers: Record<string, string>) => boolean;

const problemResponders = new WeakMap<ServerResponse, ProblemResponder>();
/** Answers of the public listeners: an error's `publicDetail`, when it has one, is what they send. */
const publicAnswers = new WeakSet<ServerResponse>();

/**
 * Have `responder` answer every problem sent on `res` (`sendProblem`, `sendError`), from any
 * step of the listener: rate limit, User-Agent filter, router, handler. Set by a listener
 * when it takes the request; without one, problems are problem+json. `audience: 'public'`
 * (the public API and the indexer) sends a `SvcError`'s `publicDetail` in place of its detail
 * and extension members, where it has one.
 */
export function answerProblemsWith(res: ServerResponse, responder: ProblemResponder, audience: 'public' | 'operators' = 'operators'): void {
  problemResponders.set(res, responder);
  if (audience === 'public') publicAnswers.add(res);
}

export function sendProblem(
  res: ServerResponse,
  code: ErrorCode,
  detail?: string,
  headers: Record<string, string> = {},
  extra?: Record<string, unknown>,
): void {
  const body = problem(code, detail, extra);
  const payload = JSON.stringify(body);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const responder = problemResponders.get(res);
  if (responder !== undefined && responder(res, body, headers)) return;
  res.writeHead(body.status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(payload)),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(payload);
}

/**
 * Send `err` as problem+json: a SvcError keeps its code (on a public listener, its
 * `publicDetail` when it has one); anything else is `svc_internal`.
 */
export function sendError(res: ServerResponse, err: unknown): void {
  if (isSvcError(err)) {
    if (err.publicDetail !== undefined && publicAnswers.has(res)) {
      sendProblem(res, err.code, err.publicDetail, { ...err.headers });
      return;
    }
    sendProblem(res, err.code, err.message, { ...err.headers }, err.extra ? { ...err.extra } : undefined);
    return;
  }
  sendProblem(res, 'svc_internal', 'internal error');
}

/** Read a request body as UTF-8 text, refusing more than `limit` bytes (413). */
export function readText(req: IncomingMessage, limit = DEFAULT_JSON_BODY_LIMIT_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new SvcError('svc_payload_too_large', `body exceeds ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(new SvcError('svc_payload_too_large', `body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (!failed) reject(err);
      failed = true;
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/**
 * Read and parse a JSON request body, refusing more than `limit` bytes (413) and invalid
 * JSON (400). An empty body reads as `{}`.
 */
export async function readJson(req: IncomingMessage, limit = DEFAULT_JSON_BODY_LIMIT_BYTES): Promise<unknown> {
  const text = (await readText(req, limit)).trim();
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new SvcError('svc_bad_request', 'body is not valid JSON');
  }
}
