/** The gateway's proxy engine: see `http-proxy.ts`. */
export * from './http-proxy';
