/**
 * The bounds every request runs within: a deadline (`timeoutMs`, with a default for calls and
 * one for reads) and a cap on the decoded size of an answer's body (`maxResponseBytes`). The
 * body is read as a stream with a running count and never buffered past the cap: past it the
 * stream is cancelled (the connection closed) and the request fails with
 * `svc_sdk_response_too_large`.
 */
import { configError, sdkError } from './errors';
import { headerRecord } from './http';

/**
 * Default deadline of `call()`: longer than the gateway's own 30 s upstream timeout, so that
 * the gateway's 504 (with its call id, and a refund when covered) arrives first.
 */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** Default deadline of a public read (`providers()`, `activity()`, `verifyRefund()`…). */
export const DEFAULT_READ_TIMEOUT_MS = 30_000;
/** Default cap on an answer's body, counted on decoded bytes: 16 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16_777_216;

/** The longest `setTimeout` delay. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** `timeoutMs` checked: an integer of milliseconds, 0 for no deadline. */
export function checkTimeout(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_TIMEOUT_MS) {
    throw configError(`${name} must be an integer of milliseconds from 0 (no deadline) to ${MAX_TIMEOUT_MS}`);
  }
  return value;
}

/** `maxResponseBytes` checked: a positive integer. */
export function checkMaxBytes(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw configError(`${name} must be a positive integer (bytes)`);
  }
  return value;
}

/** The request the body belongs to, for the error. */
export interface BodyContext {
  callId: string | null;
  attempts: number;
}

function tooLarge(res: Response, max: number, context: BodyContext): Error {
  return sdkError('svc_sdk_response_too_large', `the answer's body is larger than maxResponseBytes (${max} bytes)`, {
    status: res.status,
    headers: headerRecord(res.headers),
    callId: context.callId,
    attempts: context.attempts,
  });
}

/**
 * The whole body of `res`, decoded (fetch undoes `Content-Encoding`), refused past `max`
 * bytes. An unencoded body whose `Content-Length` is already past the cap is refused unread.
 */
export async function readBody(res: Response, max: number, context: BodyContext): Promise<Uint8Array> {
  const body = res.body;
  if (body === null) return new Uint8Array(0);
  const encoding = res.headers.get('content-encoding');
  const length = res.headers.get('content-length');
  if (
    (encoding === null || encoding.trim().toLowerCase() === 'identity') &&
    length !== null &&
    /^\d+$/.test(length.trim()) &&
    Number(length) > max
  ) {
    body.cancel().catch(() => undefined);
    throw tooLarge(res, max, context);
  }
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      reader.cancel().catch(() => undefined);
      throw tooLarge(res, max, context);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
