/**
 * The gateway's own wire contract ({market_url}, docs/design.md §3): its `/health` answers and the
 * response headers it adds to every admitted call. The gateway writes them; `svc-monitor-sdk`,
 * probes and the gateway OpenAPI document read them from here.
 */
import { z } from 'zod';
import { LimitsMode, Share } from './gateways';
import { Outcome } from './outcome';
import { GatewayEngine } from './snapshot';
import { Count, IsoTime, StateVersion } from './wire';

// ---------------------------------------------------------------------------------------
// /health

/** Why `/health` says `not_ready`: no state loaded yet, or `maintenance_mode` is on. */
export const NOT_READY_REASONS = ['no_snapshot', 'maintenance'] as const;
export const NotReadyReason = z.enum(NOT_READY_REASONS);
export type NotReadyReason = z.infer<typeof NotReadyReason>;

/** The unauthenticated `/health` body: `{"status":"ok"}` (200) or `{"status":"not_ready","reason"}` (503). */
export const PublicHealth = z.union([
  z.strictObject({ status: z.literal('ok') }),
  z.strictObject({ status: z.literal('not_ready'), reason: NotReadyReason }),
]);
export type PublicHealth = z.infer<typeof PublicHealth>;

/** What a worker is doing: listening (`running`), started and not listening yet, or waiting to be started again. */
export const WORKER_STATES = ['running', 'starting', 'restarting'] as const;

/** One worker of a gateway in its detailed `/health`. */
export const WorkerHealth = z.strictObject({
  /** 1 to `gateway.workers`, kept across restarts. */
  index: z.number().int().min(1),
  /** Its gateway id, `<gateway id>.<index>`: its journal, ack file and limit share are its own. */
  id: z.string(),
  /** Its process id; null while it is not running. */
  pid: z.number().int().nullable(),
  state: z.enum(WORKER_STATES),
  /** Times the supervisor started it again after it exited. */
  restarts: Count,
  /** Whether it answered this `/health` (a worker that did not has the fields below null). */
  answered: z.boolean(),
  ready: z.boolean().nullable(),
  snapshot_version: StateVersion.nullable(),
  control_connected: z.boolean().nullable(),
  journal_backlog: Count.nullable(),
  /** Its share of every key's limit, as control last pushed it (null before any). */
  limit_share: Share.nullable(),
  /** Connections it accepted, and calls and refusals it answered, since it started. */
  connections: Count.nullable(),
  answered_calls: Count.nullable(),
});
export type WorkerHealth = z.infer<typeof WorkerHealth>;

/** `/health` with the metrics token: what the gateway holds and how its links to control are. */
export const GatewayHealthDetail = z.strictObject({
  status: z.enum(['ok', 'not_ready']),
  ready: z.boolean(),
  reason: NotReadyReason.nullable(),
  /** Why not ready, in words (the last sync error while no state is loaded). */
  reason_detail: z.string().nullable(),
  gateway_id: z.string(),
  /** The proxy engine this gateway forwards with (`gateway.engine`). */
  engine: GatewayEngine,
  snapshot_version: StateVersion,
  snapshot_age_s: Count.nullable(),
  control_connected: z.boolean(),
  control_url: z.string(),
  /** The last update the gateway refused, or null. */
  last_nack: z.string().nullable(),
  /** Outcome records written and not yet acked by control. */
  journal_backlog: Count,
  /**
   * The share of every key's limit this gateway enforces, as control last pushed it (kept
   * while control is away and across restarts); null before any: the whole limit applies.
   */
  limit_share: z
    .strictObject({
      share: Share,
      /** Gateways the limits were divided among, this one included. */
      gateways: z.number().int().min(1),
      mode: LimitsMode,
      received_at: IsoTime,
    })
    .nullable(),
  /**
   * Whether this gateway covers the calls it admits, as control last said (a `coverage` line),
   * with its part of the pool's free capital (`allowance`) and what its calls under way and
   * recent failures hold of it; null before any (every call is covered).
   */
  coverage: z
    .strictObject({
      covered: z.boolean(),
      allowance: z.number().int().min(0),
      held: z.number().int().min(0),
      received_at: IsoTime,
    })
    .nullable(),
  /**
   * A gateway run as several workers (`gateway.workers` > 1) only: each worker, a gateway of its
   * own to control. The fields above then describe the whole gateway (docs/gateway.md, "Workers").
   */
  workers: z.array(WorkerHealth).optional(),
});
export type GatewayHealthDetail = z.infer<typeof GatewayHealthDetail>;

// ---------------------------------------------------------------------------------------
// Response headers of an admitted call (docs/design.md §3.7)

/** Non-negative integer as header text. */
const IntText = z.string().regex(/^(0|[1-9][0-9]*)$/);

/**
 * Headers the gateway adds to the answer of every admitted call. `x-svc-outcome`,
 * `x-svc-premium` and `x-svc-refund` carry the verdict known when the response head went out;
 * the outcome record carries the final one.
 */
export const CALL_HEADERS = {
  'x-svc-call-id': z.uuid({ version: 'v7' }).describe('the call id (UUIDv7), the key of its outcome record'),
  'x-svc-outcome': Outcome.describe('the outcome known when the head was sent'),
  'x-svc-latency-ms': IntText.describe(
    "the provider's latency in milliseconds, measured from the end of the request body; 0 on a caller_error 408/413 (the provider never had the whole request)",
  ),
  'x-svc-coverage': z
    .enum(['covered', 'none'])
    .describe(
      '`covered`: the pool covers the call (a failure is refunded, a success pays the premium); `none`: the call was admitted uncovered (the pool is paused, by an operator or because its free capital is below `pool.minFree`) and moves no money, or it carries no key',
    ),
  'x-svc-premium': IntText.describe("premium to be charged (micro-units): the endpoint's premium on ok with a key, covered, else 0"),
  'x-svc-refund': IntText.describe(
    'refund to be settled before clamping (micro-units): price + premium on covered failures with a key, covered, else 0',
  ),
} as const;

/** Sent on calls to priced endpoints (price or premium > 0): the money moves when the settler runs. */
export const SETTLEMENT_PENDING_HEADER = 'x-svc-settlement-pending';
