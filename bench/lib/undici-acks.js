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
const fs = require('node:fs');
const path = require('node:path');
const { Pool } = require('undici');

const dist = process.env.BENCH_ACK_DIST;
// Where the client lives in this build (it moved from protocol/ to gateway/).
const file = ['gateway/control-link/sync-post.js', 'protocol/sync-post.js'].map((f) => path.join(dist, f)).find((f) => fs.existsSync(f));
const { SyncPoster, SyncPostClosedError } = require(file);

const pools = new WeakMap();

SyncPoster.prototype.post = function post(reqPath, json) {
  if (this.closed) return Promise.reject(new SyncPostClosedError());
  let byBase = pools.get(this);
  if (byBase === undefined) pools.set(this, (byBase = new Map()));
  const base = this.endpoints.current;
  let pool = byBase.get(base);
  if (pool === undefined) {
    const timeout = this.responseTimeoutMs;
    pool = new Pool(base, { connections: this.maxConnections, headersTimeout: timeout, bodyTimeout: timeout });
    byBase.set(base, pool);
  }
  const headers = { authorization: this.authorization, 'content-type': 'application/json' };
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

process.stderr.write(`{"msg":"bench: acks on undici Pool.dispatch","file":${JSON.stringify(file)}}\n`);
