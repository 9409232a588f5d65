/**
 * Outcome classification (docs/design.md §6): one pure function from what the gateway observed about
 * a call to the outcome that decides where money moves.
 */
import type { Outcome } from '../../protocol/outcome';
import type { CallerFailure, NetworkError } from '../proxy/index';

/** The failure kinds the proxy engines report (declared in `../proxy/contract.ts`). */
export type { CallerFailure, NetworkError };

/** What the gateway observed about one forwarded call. */
export interface CallFacts {
  /** Upstream status code; null when no response head arrived. */
  status: number | null;
  /** Upstream latency in milliseconds (to the response head). */
  latencyMs: number;
  /** The endpoint's `sla_ms`. */
  slaMs: number;
  /** Transport failure, if any; it wins over a status that arrived before the failure. */
  networkError: NetworkError | null;
  /** The caller broke the call before an upstream answer reached it; wins over everything. */
  callerFailure?: CallerFailure | null | undefined;
  /** Verdict of the endpoint's response-schema check on the body; absent when none ran. */
  schema?: SchemaVerdict | undefined;
}

/**
 * What the response-schema check found in a 2xx body: `valid`, `invalid` (not JSON, or JSON
 * that fails the schema), or `unchecked` (the body was over the gateway's tee cap, or in a
 * content encoding it cannot read; such calls count as `ok` and are counted in metrics).
 */
export type SchemaVerdict = 'valid' | 'invalid' | 'unchecked';

/**
 * A check on a response that passed the status and latency rules (2xx within SLA, or a
 * 1xx/3xx within SLA). Returning an outcome overrides `ok`; returning undefined passes.
 */
export type ResponseCheck = (facts: CallFacts) => Outcome | undefined;

/** The opt-in response-schema rule: a 2xx whose body failed the schema is `schema_mismatch`. */
export const schemaCheck: ResponseCheck = (facts) =>
  facts.schema === 'invalid' && facts.status !== null && facts.status >= 200 && facts.status < 300 ? 'schema_mismatch' : undefined;

/** Checks `classify` applies unless told otherwise. */
export const DEFAULT_CHECKS: readonly ResponseCheck[] = [schemaCheck];

/**
 * Decide the outcome of a call.
 *
 * | observed | outcome |
 * |---|---|
 * | `callerFailure` set | `caller_error` |
 * | `networkError` set, or no status | `network_error` |
 * | 5xx (and anything ≥ 500) | `server_error` |
 * | 4xx, 429 included | `client_error` |
 * | 1xx/2xx/3xx, `latencyMs > slaMs` | `latency_breach` |
 * | 2xx within SLA, `schema` `invalid` | `schema_mismatch` (the default `schemaCheck`) |
 * | 1xx/2xx/3xx within SLA | first verdict of `checks`, else `ok` |
 *
 * A latency exactly equal to the SLA is within it. Slow 1xx/3xx answers are breaches too:
 * the table's `ok` requires "within the endpoint's SLA" for them as for 2xx. A slow 2xx
 * whose body also fails the schema is a `latency_breach` (both are refunded the same way).
 */
export function classify(facts: CallFacts, checks: readonly ResponseCheck[] = DEFAULT_CHECKS): Outcome {
  const { status } = facts;
  if (facts.callerFailure != null) return 'caller_error';
  if (facts.networkError !== null || status === null) return 'network_error';
  if (status >= 500) return 'server_error';
  if (status >= 400) return 'client_error';
  if (facts.latencyMs > facts.slaMs) return 'latency_breach';
  for (const check of checks) {
    const verdict = check(facts);
    if (verdict !== undefined) return verdict;
  }
  return 'ok';
}
