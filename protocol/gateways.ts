/**
 * Gateways as control's admin API shows them (`GET /_admin/v1/gateways`, `svcctl gateways list`,
 * `svcctl status`), their limit shares and weights (`PUT /_admin/v1/gateways/{id}/weight`), and
 * propagation (`POST /_admin/v1/sync/wait`, what `--wait` uses): has every connected gateway
 * applied a state version yet?
 */
import { z } from 'zod';
import { Count, IsoTime, Millis, StateVersion } from './wire';

/**
 * How a key's limit holds across gateways (`limits.mode`), the default first: `split` divides
 * it among the live gateways, each enforcing its share; `per-gateway` lets every gateway admit
 * the whole limit (N gateways, N times the limit).
 */
export const LIMITS_MODES = ['split', 'per-gateway'] as const;
export const LimitsMode = z.enum(LIMITS_MODES);
export type LimitsMode = z.infer<typeof LimitsMode>;

/**
 * A gateway's share of every key's limit: the fraction in (0, 1] it enforces (a key limited
 * to 30/min on a gateway with share 0.25 gets a bucket of 7.5/min there).
 */
export const Share = z.number().gt(0).max(1);

/** Largest weight of one gateway. @default 1000 */
export const GATEWAY_WEIGHT_MAX = 1000;
/**
 * A gateway's weight in the split (default 1): shares are proportional to the weights of the
 * live gateways. For load balancers that send uneven traffic.
 */
export const GatewayWeight = z.number().positive().max(GATEWAY_WEIGHT_MAX);

/** One gateway control knows: the state version it applied last, and whether it is connected now. */
export const GatewayStatus = z.strictObject({
  id: z.string(),
  connected: z.boolean(),
  /** Connected and acked within `sync.leaseS`: counted when control divides the limits. */
  live: z.boolean(),
  weight: GatewayWeight,
  /**
   * The share control last pushed to it, while its lease holds (a gateway cut off from control
   * keeps enforcing it); 0 once its lease has lapsed, since control has given its part to the
   * live gateways. Null when it never got one.
   */
  share: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe("its share of every key's limit; 0 once its lease has lapsed, null when it never got one"),
  applied_version: StateVersion,
  last_seen: IsoTime,
  /** The last update it refused (`v<version> at <time>: <reason>`), or null. */
  last_nack: z.string().nullable(),
  /**
   * The proxy engine it announced when it last connected (`http-proxy`, `undici`); null when it
   * announced none (a gateway older than the field).
   */
  engine: z.string().nullable(),
  /**
   * The control its sync stream is attached to (`ctl_…`; on a shared PostgreSQL database, any
   * of them); null while it is detached, or once the lease of a gateway whose control went away
   * unannounced has lapsed.
   */
  control_id: z.string().nullable().describe('the control its sync stream is attached to; null while detached'),
  /**
   * For a worker of a gateway run as several (`gateway.workers` > 1, ids `<gateway>.<n>`), the
   * gateway it belongs to (see `workerParents`); null for a gateway of its own.
   */
  gateway: z.string().nullable().describe('for a worker of a gateway run as several processes, the gateway it belongs to; else null'),
});
export type GatewayStatus = z.infer<typeof GatewayStatus>;

/** `GET /_admin/v1/gateways`: the limits mode and lease they are divided under, and every gateway. */
export const GatewaysView = z.strictObject({
  limits_mode: LimitsMode,
  /** `sync.leaseS`: how recent a gateway's last ack must be for it to count as live. */
  lease_s: Count,
  gateways: z.array(GatewayStatus),
});
export type GatewaysView = z.infer<typeof GatewaysView>;

/** Body of `PUT /_admin/v1/gateways/{id}/weight`. */
export const SetGatewayWeightRequest = z.strictObject({ weight: GatewayWeight });
export type SetGatewayWeightRequest = z.infer<typeof SetGatewayWeightRequest>;

/** Answer of `PUT /_admin/v1/gateways/{id}/weight`: the gateway after the change and every gateway's share. */
export const GatewayWeightChange = z.strictObject({
  gateway: GatewayStatus,
  /** False when the weight was already this. */
  changed: z.boolean(),
  limits_mode: LimitsMode,
  gateways: z.array(GatewayStatus),
});
export type GatewayWeightChange = z.infer<typeof GatewayWeightChange>;

/** Longest `timeout_ms` of one wait. @default 600000 (10 min) */
export const WAIT_MAX_TIMEOUT_MS = 600_000;

/** Body of `POST /_admin/v1/sync/wait`. */
export const WaitRequest = z.strictObject({
  version: StateVersion,
  timeout_ms: z.number().int().min(0).max(WAIT_MAX_TIMEOUT_MS).default(30_000),
});
export type WaitRequest = z.infer<typeof WaitRequest>;

/**
 * Answer of `POST /_admin/v1/sync/wait`: `complete` once every connected gateway applied
 * `version`; otherwise `pending` names those that had not when `timeout_ms` ran out.
 */
export const WaitResult = z.strictObject({
  version: StateVersion,
  complete: z.boolean(),
  /** Connected gateways when the wait ended. */
  gateways: Count,
  pending: z.array(z.string()),
  waited_ms: Millis,
});
export type WaitResult = z.infer<typeof WaitResult>;

/** A worker's id: `<gateway id>.<n>`, n from 1 without leading zeros. */
const WORKER_ID = /^(.+)\.([1-9][0-9]*)$/;

/**
 * The gateway each worker id belongs to (`gateway.workers` > 1: the workers of gateway `X` are
 * `X.1` … `X.N`), read from the ids control knows: `X.n` is a worker of `X` when `X.1` and at least
 * one other `X.m` are known and no gateway is called `X` itself. Ids not in the map are gateways
 * of their own.
 */
export function workerParents(ids: readonly string[]): Map<string, string> {
  const known = new Set(ids);
  const byParent = new Map<string, string[]>();
  for (const id of ids) {
    const m = WORKER_ID.exec(id);
    if (m === null) continue;
    const list = byParent.get(m[1]!) ?? [];
    list.push(id);
    byParent.set(m[1]!, list);
  }
  const parents = new Map<string, string>();
  for (const [parent, workers] of byParent) {
    if (known.has(parent) || workers.length < 2 || !known.has(`${parent}.1`)) continue;
    for (const id of workers) parents.set(id, parent);
  }
  return parents;
}

/**
 * The gateways in the order to show them, each with `gateway`: for a worker, the gateway it
 * belongs to (see {@link workerParents}); null for a gateway of its own. A gateway's workers
 * follow one another in index order, where its first worker was listed.
 */
export function groupWorkers<T extends { id: string; gateway?: string | null }>(
  gateways: readonly T[],
): (T & { gateway: string | null })[] {
  const parents = workerParents(gateways.map((g) => g.id));
  const index = (id: string) => Number(id.slice(id.lastIndexOf('.') + 1));
  const out: (T & { gateway: string | null })[] = [];
  const placed = new Set<string>();
  for (const g of gateways) {
    const parent = parents.get(g.id) ?? null;
    if (parent === null) out.push({ ...g, gateway: null });
    else if (!placed.has(parent)) {
      placed.add(parent);
      const workers = gateways.filter((w) => parents.get(w.id) === parent).sort((a, b) => index(a.id) - index(b.id));
      for (const w of workers) out.push({ ...w, gateway: parent });
    }
  }
  return out;
}
