/**
 * The proxy engines a gateway can forward with (`gateway.engine`, docs/design.md §2), the default
 * first. Plain data without zod, so `svcctl` can name them in its help without loading schemas;
 * the schema is `GatewayEngine` in `snapshot.ts`.
 */
export const GATEWAY_ENGINES = ['http-proxy', 'undici'] as const;
