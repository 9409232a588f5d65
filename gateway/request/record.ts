/**
 * The record stage of the request pipeline (`handler.ts`): one admitted call's outcome record,
 * from the answer's head to the end of the call. An upstream answer's record is taken when its
 * body ends (a reset or timeout mid-body makes it a network error; on endpoints with a response
 * schema, a 2xx body gives its verdict) and gathered into the journal's write for that
 * event-loop turn; the caller's response ends only after that write (the proxy holds the last
 * chunk). A body that breaks off, or the caller leaving, records at the end of the call; the
 * gateway's own 502/504 record before their head is sent. Exactly one record per call.
 */
import { COVERED_FAILURES, type Outcome, type OutcomeRecord } from '../../protocol/outcome';
import { classify, type CallFacts } from './classify';
import type { Journal } from '../journal/journal';
import type { GatewayMetrics } from '../metrics';
import type { ForwardResult, HeaderList, ResponseHead } from '../proxy/index';
import { BodyCheck, hasCheckableBody, verdictOf } from './schema-check';
import type { Coverage } from '../state/coverage';
import type { EndpointEntry, KeyEntry } from '../state/state';
import { isoTime } from './iso-time';

/**
 * The status recorded for a call whose caller left before any answer was sent (nginx's 499,
 * "client closed request"); nothing is sent with it.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * `X-Svc-Coverage`: `covered`, or `none` for a call admitted uncovered (and a keyless one).
 * `X-Svc-Premium` and `X-Svc-Refund`: what settlement will move for this call by its head-time
 * outcome, before any clamping (premium on `ok`; price + premium on covered failures; 0
 * otherwise, for uncovered calls and for keyless calls). `X-Svc-Settlement-Pending: 1` on
 * priced endpoints.
 */
function settlementHeaders(headers: HeaderList, endpoint: EndpointEntry, covered: boolean, outcome: Outcome): void {
  headers.push(
    'x-svc-coverage',
    covered ? 'covered' : 'none',
    'x-svc-premium',
    String(covered && outcome === 'ok' ? endpoint.premium : 0),
    'x-svc-refund',
    String(covered && COVERED_FAILURES.has(outcome) ? endpoint.price + endpoint.premium : 0),
  );
  if (endpoint.price > 0 || endpoint.premium > 0) headers.push('x-svc-settlement-pending', '1');
}

/** One admitted call's record: `head()` when the answer's head is written, `end()` once the call is over. */
export class CallRecord {
  /** The record appended (or, while `pending` is set, the head-time one). */
  private recorded: OutcomeRecord | null = null;
  /** An upstream answer's record waiting for the end of its body, appended exactly once. */
  private pending: { record: OutcomeRecord; facts: CallFacts } | null = null;
  private readonly journal: Journal;
  private readonly metrics: GatewayMetrics;
  private readonly gatewayId: string;
  readonly callId: string;
  private readonly startedAt: string;
  private readonly key: KeyEntry | null;
  private readonly endpoint: EndpointEntry;
  private readonly method: string;
  /** The `RateLimit-Policy` and `RateLimit` of the call's bucket, copied onto the answer's head. */
  private readonly limitHeaders: Record<string, string>;
  /** The premium the call reserved from this instance's budget (prepaid endpoints), else 0. */
  private readonly reserved: number;
  private readonly instance: string | null;
  /** What a covered call holds of the gateway's allowance until it ends; null: uncovered (or keyless). */
  private readonly held: number | null;
  private readonly coverage: Pick<Coverage, 'end'> | undefined;

  constructor(
    sinks: { journal: Journal; metrics: GatewayMetrics; gatewayId: string; coverage?: Pick<Coverage, 'end'> },
    callId: string,
    t: number,
    key: KeyEntry | null,
    endpoint: EndpointEntry,
    method: string,
    limitHeaders: Record<string, string>,
    reserved = 0,
    instance: string | null = null,
    held: number | null = key === null ? null : 0,
  ) {
    this.journal = sinks.journal;
    this.metrics = sinks.metrics;
    this.gatewayId = sinks.gatewayId;
    this.callId = callId;
    this.startedAt = isoTime(t);
    this.key = key;
    this.endpoint = endpoint;
    this.method = method;
    this.limitHeaders = limitHeaders;
    this.reserved = reserved;
    this.instance = instance;
    this.held = held;
    this.coverage = sinks.coverage;
  }

  private recordOf(status: number, outcome: Outcome, latencyMs: number): OutcomeRecord {
    const keyId = this.key?.id ?? null;
    // Control counts the reservation against the instance's budget when it ingests the record.
    // Each shape is one literal, built whole: no property added after, no backing store per record.
    if (this.reserved > 0) {
      return {
        call_id: this.callId,
        key_id: keyId,
        endpoint_id: this.endpoint.id,
        method: this.method,
        status,
        outcome,
        latency_ms: latencyMs,
        started_at: this.startedAt,
        gateway_id: this.gatewayId,
        reserved: this.reserved,
        instance: this.instance!,
      };
    }
    if (this.held === null && keyId !== null) {
      return {
        call_id: this.callId,
        key_id: keyId,
        endpoint_id: this.endpoint.id,
        method: this.method,
        status,
        outcome,
        latency_ms: latencyMs,
        started_at: this.startedAt,
        gateway_id: this.gatewayId,
        coverage: 'none',
      };
    }
    return {
      call_id: this.callId,
      key_id: keyId,
      endpoint_id: this.endpoint.id,
      method: this.method,
      status,
      outcome,
      latency_ms: latencyMs,
      started_at: this.startedAt,
      gateway_id: this.gatewayId,
    };
  }

  /**
   * The answer's head: its head-time outcome, the body observer that records at body end (or the
   * record itself, for the gateway's own answers), and the gateway's headers on the head.
   */
  head(head: ResponseHead): void {
    const { endpoint } = this;
    const facts: CallFacts = {
      status: head.fromUpstream ? head.status : null,
      latencyMs: head.upstreamLatencyMs,
      slaMs: endpoint.slaMs,
      networkError: head.networkError,
      callerFailure: head.callerFailure,
    };
    const outcome = classify(facts);
    const latency = Math.round(head.upstreamLatencyMs);
    const recorded = (this.recorded = this.recordOf(head.status, outcome, latency));
    this.pending = null;
    const schema = endpoint.responseSchema;
    if (schema !== null && outcome === 'ok' && head.fromUpstream && hasCheckableBody(this.method, head.status)) {
      const check = new BodyCheck(schema, head.headers);
      const waiting = (this.pending = { record: recorded, facts });
      head.body = {
        chunk: check.chunk,
        end: (release) => {
          if (this.pending !== waiting) return release(null);
          this.pending = null;
          const result = check.finish();
          this.metrics.schemaCheck(endpoint.id, result);
          this.recorded = { ...waiting.record, outcome: classify({ ...waiting.facts, schema: verdictOf(result) }) };
          this.journal.appendThen(this.recorded, release);
        },
      };
    } else if (head.fromUpstream) {
      const waiting = (this.pending = { record: recorded, facts });
      head.body = {
        end: (release) => {
          if (this.pending !== waiting) return release(null);
          this.pending = null;
          this.journal.appendThen(waiting.record, release);
        },
      };
    } else {
      this.journal.append(recorded);
    }
    const limitHeaders = this.limitHeaders;
    for (const name in limitHeaders) head.headers.push(name, limitHeaders[name]!);
    head.headers.push('x-svc-call-id', this.callId, 'x-svc-outcome', outcome, 'x-svc-latency-ms', String(latency));
    settlementHeaders(head.headers, endpoint, this.held !== null, outcome);
  }

  /** The call is over: append a record still waiting (or the caller-left one), and count the call. */
  end(result: ForwardResult): void {
    const waiting = this.pending;
    if (waiting !== null) {
      // The body never ended: a reset or timeout mid-body is the provider's network error;
      // a caller that left (or a gateway fault) leaves the head-time verdict, unchecked.
      this.pending = null;
      const broken = result.networkError === 'reset' || result.networkError === 'timeout' ? result.networkError : null;
      this.recorded =
        broken === null ? waiting.record : { ...waiting.record, outcome: classify({ ...waiting.facts, networkError: broken }) };
      this.journal.append(this.recorded);
    } else if (this.recorded === null && result.networkError === 'client_abort') {
      // The caller left before any answer: its own doing, recorded so that nothing moves.
      this.recorded = this.recordOf(CLIENT_CLOSED_REQUEST, 'caller_error', Math.round(result.upstreamLatencyMs));
      this.journal.append(this.recorded);
    }
    const r = this.recorded;
    // A covered call gives back its part of the allowance, or keeps it spent if it failed.
    if (this.held !== null && this.held > 0) this.coverage?.end(this.held, r !== null && COVERED_FAILURES.has(r.outcome), this.callId);
    if (r !== null) {
      this.metrics.call(this.endpoint.id, r.outcome, r.status, result.status === null ? null : result.upstreamLatencyMs / 1000);
    }
  }
}
