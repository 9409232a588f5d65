/** Connection pool settings every engine starts from (`ProxyOptions` overrides them). */
import { DEFAULT_UPSTREAM_MAX_SOCKETS } from '../../config/defaults';

/**
 * Upstream connections per origin (http-proxy: per agent, http and https each): the default of
 * `gateway.upstreamMaxSockets`, one number for the setting and the engines. @default 256
 */
export const DEFAULT_MAX_SOCKETS = DEFAULT_UPSTREAM_MAX_SOCKETS;
/** Idle keep-alive connections kept per agent (http-proxy only; undici closes idle ones by time). @default 64 */
export const DEFAULT_MAX_FREE_SOCKETS = 64;
/** Idle keep-alive connections are closed after this, below common upstream keep-alive timeouts. @default 4000 */
export const DEFAULT_FREE_SOCKET_TIMEOUT_MS = 4_000;
