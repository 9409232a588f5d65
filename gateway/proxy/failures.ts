/**
 * What a failed call becomes, the same for every engine: which transport errors are a refused
 * connection and which a reset, and the problem+json answers forward() sends itself.
 */
import type { ServerResponse } from 'node:http';
import { sendProblem } from '../../runtime/http';
import type { NetworkError } from './contract';

/** Error codes of a connection that never carried the request: refused, DNS, routing, TLS. */
const CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Map an upstream socket error to refused (never connected) or reset (anything after). */
export function networkErrorOf(err: unknown): 'refused' | 'reset' {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code !== undefined && CONNECT_FAILURES.has(code) ? 'refused' : 'reset';
}

/** A response's declared body length, or -1 when it has none (or an unusable one). */
export function declaredLength(value: string | undefined): number {
  if (value === undefined) return -1;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}

/** 504 `svc_upstream_timeout` or 502 `svc_upstream_unavailable`; `extra` are the head hook's headers. */
export function sendNetworkFailure(res: ServerResponse, kind: NetworkError, timeoutMs: number, extra: Record<string, string>): void {
  if (kind === 'timeout') {
    sendProblem(res, 'svc_upstream_timeout', `upstream did not answer within ${timeoutMs} ms`, extra);
  } else {
    sendProblem(
      res,
      'svc_upstream_unavailable',
      kind === 'refused' ? 'upstream refused the connection' : 'upstream reset the connection',
      extra,
    );
  }
}

/** 408 `svc_request_timeout` or 413 `svc_payload_too_large` for a caller that broke its own request. */
export function sendCallerFailure(
  res: ServerResponse,
  kind: 'body_too_large' | 'client_timeout',
  limits: { clientBodyTimeoutMs: number; bodyLimitBytes: number | undefined },
  extra: Record<string, string>,
): void {
  if (kind === 'client_timeout') {
    sendProblem(res, 'svc_request_timeout', `the request body stalled for more than ${limits.clientBodyTimeoutMs} ms`, extra);
  } else {
    sendProblem(res, 'svc_payload_too_large', `body exceeds ${limits.bodyLimitBytes} bytes`, extra);
  }
}
