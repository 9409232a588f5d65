/**
 * Outcome records (docs/design.md §6): one per admitted gateway call, written to the gateway's
 * journal before the response finishes, shipped to control in acked batches, stored
 * idempotently by `call_id`.
 */
import { z } from 'zod';
import { InstanceId } from './budgets';

export const OUTCOMES = [
  'ok',
  'latency_breach',
  'server_error',
  'network_error',
  'schema_mismatch',
  'client_error',
  'caller_error',
] as const;
export const Outcome = z.enum(OUTCOMES);
export type Outcome = z.infer<typeof Outcome>;

/** Outcomes that are a provider's failure and earn a refund. */
export const COVERED_FAILURES: ReadonlySet<Outcome> = new Set(['latency_breach', 'server_error', 'network_error', 'schema_mismatch']);

/**
 * Outcomes that say nothing about the provider, so they are outside the failure-rate
 * denominator and the latency figures: `client_error` (the upstream refused the caller's
 * request with a 4xx) and `caller_error` (the call failed by the caller's doing: it left before
 * the answer, sent a body over the limit, or stalled mid-body). Neither moves money.
 */
export const UNRATED_OUTCOMES: ReadonlySet<Outcome> = new Set(['client_error', 'caller_error']);

export const OutcomeRecord = z
  .object({
    call_id: z.uuid(),
    key_id: z.string().min(1).max(64).nullable(),
    endpoint_id: z.string().min(1).max(63),
    method: z.string().min(1).max(16),
    /**
     * HTTP status returned to the caller: the upstream's, 502/504 for network errors, and for
     * `caller_error` 408 (body stalled), 413 (body over the limit) or 499 (the caller left
     * before the answer; nothing was sent).
     */
    status: z.number().int().min(100).max(599),
    outcome: Outcome,
    /**
     * The provider's latency (ms from the end of the request body to the response head, or to
     * the failure). For `caller_error`, what the provider spent: 0 when it never had the whole
     * request; never the caller's own stall.
     */
    latency_ms: z.number().int().min(0),
    started_at: z.iso.datetime(),
    gateway_id: z.string().min(1).max(64),
    /**
     * On a `prepaid` endpoint, the premium the call reserved from the gateway's budget for the
     * key's account, and the gateway instance whose budget it was (protocol/budgets.ts). Both or
     * neither.
     */
    reserved: z.number().int().min(1).optional(),
    instance: InstanceId.optional(),
    /**
     * `none`: the gateway admitted the call uncovered (the pool was paused, or this gateway's
     * share of its free capital was spent), so it settles with premium 0 and refund 0, and the
     * answer said `X-Svc-Coverage: none`. Absent: covered (and on every record of gateways
     * older than coverage).
     */
    coverage: z.literal('none').optional(),
  })
  .strict();
export type OutcomeRecord = z.infer<typeof OutcomeRecord>;

/**
 * The nil UUID, first of all call ids in order (bytes, or lowercase text): paired with a time,
 * a position before every call at that time.
 */
export const NIL_CALL_ID = '00000000-0000-0000-0000-000000000000';

/** A call id as the wire accepts one (`OutcomeRecord.call_id`): a UUID, in either case. */
const CALL_ID = z.regexes.uuid();

/**
 * A call id in the form control stores it: a UUID in lowercase (RFC 9562 §4), as gateways write
 * them and as PostgreSQL's `uuid` type gives them back. Ingest stores every id so, and lookups
 * compare so, so an id sent in capitals is the same call on both stores. Null for a string that
 * is not a UUID: no call can have that id.
 */
export function canonicalCallId(id: string): string | null {
  return CALL_ID.test(id) ? id.toLowerCase() : null;
}

/** Body of `POST /_sync/v1/outcomes`. */
export const OutcomeBatch = z.object({ gateway_id: z.string().min(1).max(64), records: z.array(OutcomeRecord).max(10_000) }).strict();
export type OutcomeBatch = z.infer<typeof OutcomeBatch>;

/**
 * Control's answer, sent only after the batch is committed: every record of the batch is now
 * held by control (`accepted` new ones, `duplicates` it already had), so the gateway may drop
 * the whole batch from its journal.
 *
 * `ingest_seq` and `ingest_instance` (from controls that have them): the number this control
 * process gave the batch's commit, counting from 1 at its start, and the process (`instance`,
 * drawn at its start). A coverage evaluation of the same process that started at that number
 * or later read the batch (an `ingested` line, protocol/snapshot.ts `IngestedLine`): the
 * gateway stops counting the batch's covered failures against its allowance once it has such
 * an evaluation (docs/money.md, "Pause"). Gateways read the answer without checking it whole,
 * so older ones ignore both.
 */
export const OutcomeAck = z.strictObject({
  accepted: z.number().int().min(0),
  duplicates: z.number().int().min(0),
  ingest_seq: z.number().int().min(1).optional(),
  ingest_instance: InstanceId.optional(),
});
export type OutcomeAck = z.infer<typeof OutcomeAck>;
