/**
 * Gateways as control's admin API shows them (`GET /_admin/v1/gateways`, `svcctl status`) and
 * propagation (`POST /_admin/v1/sync/wait`, what `--wait` uses): has every connected gateway
 * applied a state version yet?
 */
import { z } from 'zod';
import { Count, IsoTime, Millis, StateVersion } from './wire';

/** One gateway control knows: the state version it applied last, and whether it is connected now. */
export const GatewayStatus = z.strictObject({
  id: z.string(),
  connected: z.boolean(),
  applied_version: StateVersion,
  last_seen: IsoTime,
  /** The last update it refused (`v<version> at <time>: <reason>`), or null. */
  last_nack: z.string().nullable(),
  /**
   * The proxy engine it announced when it last connected (`http-proxy`, `undici`); null when it
   * has not connected since control started.
   */
  engine: z.string().nullable(),
});
export type GatewayStatus = z.infer<typeof GatewayStatus>;

/** `GET /_admin/v1/gateways`. */
export const GatewaysView = z.strictObject({ gateways: z.array(GatewayStatus) });
export type GatewaysView = z.infer<typeof GatewaysView>;

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
