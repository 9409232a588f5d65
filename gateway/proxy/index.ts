/**
 * The forwarding contract every proxy engine implements (`contract.ts`), and `createProxy`, which picks the
 * engine `gateway.engine` names: `http-proxy.ts` (http-proxy 1.18.1, the default) or `undici.ts`
 * (undici's dispatcher API; its connections in `undici-pool.ts`, its request body in
 * `undici-body.ts`). Only these files import their library; the rest of the gateway imports this
 * module. What a call is on every engine (its single result, its two clocks, the answers
 * forward() sends itself, the held last chunk) is `call.ts`'s `ForwardCall`; each engine's call
 * extends it with how that library reaches the upstream. A third engine is one more file and one more entry in `ENGINES` below (and in
 * `protocol/engines.ts`).
 *
 * One call, whichever engine carries it:
 * - `forward()` reports exactly once how it went (`ForwardResult`);
 * - two clocks: the caller's (`clientBodyTimeoutMs`, the longest pause between request-body
 *   chunks; past it 408 `svc_request_timeout` with `Connection: close`) and the provider's (the
 *   endpoint's timeout, latency and SLA, from the moment the last request byte was handed to the
 *   upstream request, and while the upstream holds the body back);
 * - an upstream timeout (504 `svc_upstream_timeout`) is told apart from a refused or reset
 *   connection, DNS failures included (502 `svc_upstream_unavailable`);
 * - a caller that leaves cancels the upstream request, also while it waits for a connection; a
 *   body streamed past `bodyLimitBytes` is cut with 413; an upstream that fails mid-body has the
 *   caller's response destroyed;
 * - headers cross only as `headers.ts` built them; redirects are passed back, never followed;
 * - the last chunk of an upstream body with a declared length is held until the head hook's
 *   body observer releases it, so a caller never holds a complete answer whose outcome record
 *   is not journaled yet.
 *
 * `test/gateway/proxy-*.ts` hold every engine to these rules (the harness runs each test once
 * per engine).
 */
import { InvariantError } from '../../protocol/coded-error';
import { GATEWAY_ENGINES, type GatewayEngine } from '../../protocol/snapshot';
import type { GatewayProxy, ProxyOptions } from './contract';
import { createHttpProxyEngine } from './http-proxy';
import { createUndiciEngine } from './undici';

export { GATEWAY_ENGINES, type GatewayEngine };
export type * from './contract';
export { headerListValue, upstreamRequestHeaders, type HeaderList } from './headers';
export { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
export { networkErrorOf } from './failures';

const ENGINES: { readonly [E in GatewayEngine]: (options: ProxyOptions) => GatewayProxy } = {
  'http-proxy': createHttpProxyEngine,
  undici: createUndiciEngine,
};

/** Create the proxy on `engine` (default http-proxy). One per gateway process. */
export function createProxy(options: ProxyOptions & { engine?: GatewayEngine } = {}): GatewayProxy {
  const engine = options.engine ?? GATEWAY_ENGINES[0];
  const create = ENGINES[engine];
  if (create === undefined)
    throw new InvariantError(`unknown proxy engine ${JSON.stringify(engine)}; one of ${GATEWAY_ENGINES.join(', ')}`);
  return create(options);
}
