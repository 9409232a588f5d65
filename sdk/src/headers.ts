/**
 * The gateway's `X-Svc-*` answer headers, read strictly: an outcome outside the protocol's
 * list, a call id that is not a UUIDv7, or an amount that is not an integer is not svc's
 * answer, and is refused with `svc_sdk_bad_response` rather than passed on.
 *
 * @see generated/call-headers.ts (from protocol/outcome.ts and protocol/gateway.ts)
 */
import { sdkError } from './errors';
import { CALL_ID_PATTERN, COVERAGES, OUTCOMES, type Coverage } from './generated/call-headers';
import type { Outcome } from './generated/wire';
import { headerRecord } from './http';

/** What the gateway says about an admitted call, from its `x-svc-*` response headers. */
export interface SvcFields {
  /** `X-Svc-Call-Id` (UUIDv7). */
  callId: string | null;
  /** `X-Svc-Outcome`: the verdict known when the head was sent. */
  outcome: Outcome | null;
  /**
   * `X-Svc-Coverage`: `covered`, or `none` when the call was admitted uncovered (the pool paused)
   * or carried no key; it then moves no money. Null from gateways older than coverage.
   */
  coverage: Coverage | null;
  /** `X-Svc-Refund`: micro-units to be refunded before clamping (0 when none). */
  refund: number | null;
  /** `X-Svc-Premium`: micro-units of premium to be charged (0 when none). */
  premium: number | null;
  /** `X-Svc-Latency-Ms`: the provider's latency as the gateway measured it. */
  latencyMs: number | null;
}

const INTEGER = /^(?:0|[1-9][0-9]{0,14})$/;

/** A header value for an error message: quoted, and cut short. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/** Whether `value` is a call id (`X-Svc-Call-Id`: a UUIDv7). */
export function isCallId(value: unknown): value is string {
  return typeof value === 'string' && CALL_ID_PATTERN.test(value);
}

/** The `x-svc-*` fields of an answer; throws `svc_sdk_bad_response` on a malformed one. */
export function svcFields(res: Response, attempts: number): SvcFields {
  const problems: string[] = [];
  const get = (name: string): string | null => {
    const value = res.headers.get(name);
    return value === null ? null : value.trim();
  };
  const callId = get('x-svc-call-id');
  if (callId !== null && !isCallId(callId)) problems.push(`X-Svc-Call-Id ${shown(callId)} is not a call id (UUIDv7)`);
  const outcome = get('x-svc-outcome');
  if (outcome !== null && !(OUTCOMES as readonly string[]).includes(outcome)) {
    problems.push(`X-Svc-Outcome ${shown(outcome)} is not one of ${OUTCOMES.join(', ')}`);
  }
  const coverage = get('x-svc-coverage');
  if (coverage !== null && !(COVERAGES as readonly string[]).includes(coverage)) {
    problems.push(`X-Svc-Coverage ${shown(coverage)} is not one of ${COVERAGES.join(', ')}`);
  }
  const integer = (name: string): number | null => {
    const value = get(name);
    if (value === null) return null;
    if (INTEGER.test(value)) return Number(value);
    problems.push(
      `${name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())} ${shown(value)} is not an integer ≥ 0`,
    );
    return null;
  };
  const refund = integer('x-svc-refund');
  const premium = integer('x-svc-premium');
  const latencyMs = integer('x-svc-latency-ms');
  if (problems.length > 0) {
    throw sdkError('svc_sdk_bad_response', `the answer is not svc's: ${problems.join('; ')}`, {
      status: res.status,
      headers: headerRecord(res.headers),
      attempts,
    });
  }
  return { callId, outcome: outcome as Outcome | null, coverage: coverage as Coverage | null, refund, premium, latencyMs };
}
