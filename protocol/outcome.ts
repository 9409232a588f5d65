/**
 * Outcome records (DESIGN §6): one per admitted gateway call, written to the gateway's
 * journal before the response finishes, shipped to control in acked batches, stored
 * idempotently by `call_id`.
 */
import { z } from 'zod';

export const OUTCOMES = ['ok', 'latency_breach', 'server_error', 'network_error', 'schema_mismatch', 'client_error'] as const;
export const Outcome = z.enum(OUTCOMES);
export type Outcome = z.infer<typeof Outcome>;

/** Outcomes that are a provider's failure and earn a refund. */
export const COVERED_FAILURES: ReadonlySet<Outcome> = new Set(['latency_breach', 'server_error', 'network_error', 'schema_mismatch']);

export const OutcomeRecord = z
  .object({
    call_id: z.string().uuid(),
    key_id: z.string().min(1).max(64).nullable(),
    endpoint_id: z.string().min(1).max(63),
    method: z.string().min(1).max(16),
    /** HTTP status returned to the caller (the upstream's, or 502/504 for network errors). */
    status: z.number().int().min(100).max(599),
    outcome: Outcome,
    latency_ms: z.number().int().min(0),
    started_at: z.string().datetime(),
    gateway_id: z.string().min(1).max(64),
  })
  .strict();
export type OutcomeRecord = z.infer<typeof OutcomeRecord>;

/** Body of `POST /_sync/v1/outcomes`. */
export const OutcomeBatch = z.object({ gateway_id: z.string().min(1).max(64), records: z.array(OutcomeRecord).max(10_000) }).strict();
export type OutcomeBatch = z.infer<typeof OutcomeBatch>;

/**
 * Control's answer, sent only after the batch is committed: every record of the batch is now
 * held by control (`accepted` new ones, `duplicates` it already had), so the gateway may drop
 * the whole batch from its journal.
 */
export interface OutcomeAck {
  accepted: number;
  duplicates: number;
}
