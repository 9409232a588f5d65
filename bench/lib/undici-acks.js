'use strict';
/**
 * Preloaded into a gateway (`node --require`) by bench/ack-client.js: its acks, nacks and lease
 * renewals go on undici's `Pool` (`dispatch` with a handler that keeps the status and drops the
 * body, the cheaper of the two undici clients measured before) instead of `SyncPoster`'s
 * hand-written HTTP/1.1. The same contract where it costs CPU per change: one pool per control
 * of `maxConnections` connections, the response timeout as undici's `headersTimeout` and
 * `bodyTimeout`; the keyed queue is left to the pool's own (requests only wait there while every
 * connection carries one, which the measured changes never reach). `BENCH_ACK_DIST` is the
 * build the gateway runs.
 */
const { Pool } = require('undici');
const { internal } = require('./internals');

const { SyncPoster, SyncPostClosedError } = internal('gateway/control-link/sync-post', process.env.BENCH_ACK_DIST);

const pools = new WeakMap();

/**
 * The poster's private fields this replacement reads, as the class declares them (a rename there
 * fails here at run time, so the bench's first ack says so).
 *
 * @typedef {{ closed: boolean, endpoints: { current: string }, responseTimeoutMs: number, maxConnections: number, authorization: string }} PosterFields
 */

SyncPoster.prototype.post = function post(reqPath, json) {
  const self = /** @type {PosterFields} */ (/** @type {unknown} */ (this));
  if (self.closed) return Promise.reject(new SyncPostClosedError());
  let byBase = pools.get(this);
  if (byBase === undefined) pools.set(this, (byBase = new Map()));
  const base = self.endpoints.current;
  let pool = byBase.get(base);
  if (pool === undefined) {
    const timeout = self.responseTimeoutMs;
    pool = new Pool(base, { connections: self.maxConnections, headersTimeout: timeout, bodyTimeout: timeout });
    byBase.set(base, pool);
  }
  const headers = { authorization: self.authorization, 'content-type': 'application/json' };
  return new Promise((resolve, reject) => {
    let status = 0;
    pool.dispatch(
      { origin: base, method: 'POST', path: reqPath, headers, body: json },
      {
        onConnect() {},
        onHeaders(statusCode) {
          status = statusCode;
          return true;
        },
        onData() {
          return true;
        },
        onComplete() {
          resolve(status);
        },
        onError(err) {
          reject(err);
        },
      },
    );
  });
};

const close = SyncPoster.prototype.close;
SyncPoster.prototype.close = function closeAll() {
  close.call(this);
  for (const pool of pools.get(this)?.values() ?? []) pool.destroy().catch(() => undefined);
};

process.stderr.write(`{"msg":"bench: acks on undici Pool.dispatch","client":"gateway/control-link/sync-post"}\n`);
