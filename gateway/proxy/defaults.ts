/** Connection pool settings every engine starts from (`ProxyOptions` overrides them). */

/** Upstream connections per origin (http-proxy: per agent, http and https each). @default 256 */
export const DEFAULT_MAX_SOCKETS = 256;
/** Idle keep-alive connections kept per agent (http-proxy only; undici closes idle ones by time). @default 64 */
export const DEFAULT_MAX_FREE_SOCKETS = 64;
/** Idle keep-alive connections are closed after this, below common upstream keep-alive timeouts. @default 4000 */
export const DEFAULT_FREE_SOCKET_TIMEOUT_MS = 4_000;
