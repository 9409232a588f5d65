'use strict';
/**
 * What undici's `headersTimeout` measures (gateway/README.md, "The undici engine"): its
 * resolution, whether it runs while the request body's source pauses, whether it runs while the
 * upstream does not read the body, and whether it counts the wait for a connection.
 * Usage: node bench/undici-headers-timeout.js (about 15 s).
 */
const http = require('node:http');
const net = require('node:net');
const { Readable } = require('node:stream');
const { Client } = require('undici');
const { performance } = require('node:perf_hooks');

function call(client, body, headersTimeout) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    client.dispatch(
      { path: '/', method: 'POST', body, headersTimeout, bodyTimeout: 0 },
      {
        onConnect() {},
        onHeaders(s) {
          resolve({ ms: Math.round(performance.now() - t0), status: s });
          return true;
        },
        onData() {
          return true;
        },
        onComplete() {},
        onError(err) {
          resolve({ ms: Math.round(performance.now() - t0), err: err.code });
        },
      },
    );
  });
}
const listen = (s) => new Promise((r) => s.listen(0, '127.0.0.1', () => r(s.address().port)));

(async () => {
  // 1. Resolution: a silent upstream, timeouts of 100, 300, 1000, 1500 ms.
  const silent = http.createServer(() => {});
  const p1 = await listen(silent);
  for (const ms of [100, 300, 1000, 1500]) {
    const c = new Client(`http://127.0.0.1:${p1}`);
    const r = await call(c, 'x', ms);
    console.log(`silent upstream, headersTimeout ${ms}: fired after ${r.ms} ms (${r.err})`);
    await c.destroy();
  }
  // 2. A body that pauses 1500 ms before its last chunk (the caller), headersTimeout 500; the upstream answers at once after the body.
  const echo = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  const p2 = await listen(echo);
  {
    const c = new Client(`http://127.0.0.1:${p2}`);
    const body = new Readable({ read() {} });
    body.push('a');
    setTimeout(() => {
      body.push('b');
      body.push(null);
    }, 1500);
    const r = await call(c, body, 500);
    console.log(`body paused 1500 ms by its source, headersTimeout 500: ${r.err ?? 'status ' + r.status} after ${r.ms} ms`);
    await c.destroy();
  }
  // 3. Silent upstream after a slow body: is the timer counted from the body's end?
  {
    const c = new Client(`http://127.0.0.1:${p1}`);
    const body = new Readable({ read() {} });
    body.push('a');
    let ended = 0;
    setTimeout(() => {
      ended = performance.now();
      body.push(null);
    }, 1500);
    const r = await call(c, body, 500);
    console.log(
      `body ends after 1500 ms, silent upstream, headersTimeout 500: ${r.err} ${Math.round(performance.now() - ended)} ms after the body ended`,
    );
    await c.destroy();
  }
  // 4. The upstream stops reading the body (socket full): fires while undici waits to write.
  const sink = net.createServer((s) => s.pause());
  const p3 = await listen(sink);
  {
    const c = new Client(`http://127.0.0.1:${p3}`);
    const big = Buffer.alloc(64 * 1024 * 1024, 120);
    const r = await call(c, Readable.from([big]), 500);
    console.log(`upstream not reading a 64 MiB body, headersTimeout 500: ${r.err} after ${r.ms} ms`);
    await c.destroy();
  }
  // 5. Waiting for a connection: one connection busy for 1500 ms, a second call queued behind it.
  const slow = http.createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end('ok'), req.url === '/' ? 1500 : 0);
  });
  const p4 = await listen(slow);
  {
    const c = new Client(`http://127.0.0.1:${p4}`, { pipelining: 1 });
    const first = call(c, null, 5000);
    const second = call(c, null, 1000);
    console.log(
      `first: ${JSON.stringify(await first)}; second (queued ~1500 ms behind it, headersTimeout 1000): ${JSON.stringify(await second)}`,
    );
    await c.destroy();
  }
  process.exit(0);
})();
