'use strict';
/**
 * Baseline: a bare http-proxy 1.18.1 server with the gateway's upstream agent settings
 * (keep-alive, maxSockets 256, maxFreeSockets 64, 4 s idle timeout, LIFO) and proxyTimeout.
 * Usage: node bare-proxy.js <upstream base URL>
 *
 * BENCH_PROXY_WORKERS=N (default 1): N such servers on one port under node:cluster (the primary
 * hands out connections round-robin, as svc's gateway workers do), the baseline for what two
 * Node processes cost against one (`npm run bench:workers`). The ready line lists their pids.
 */
// The module is the cluster object itself (its types declare it as the default export only).
const cluster = /** @type {import('node:cluster').Cluster} */ (/** @type {unknown} */ (require('node:cluster')));
const http = require('node:http');
const httpProxy = require('http-proxy');
const { announceReady, exitWithParent, listen } = require('./common');

const target = process.argv[2];
if (!target) throw new Error('usage: bare-proxy.js <upstream base URL>');
const maxSockets = Number(process.env.BENCH_MAX_SOCKETS || 256);
const workers = Number(process.env.BENCH_PROXY_WORKERS || 1);

if (workers > 1 && cluster.isPrimary) primary();
else serve();

/** Fork the workers; ready once all of them listen; stop them when the parent goes. */
function primary() {
  const pids = [];
  let listening = 0;
  for (let i = 0; i < workers; i++) {
    const worker = cluster.fork();
    pids.push(worker.process.pid);
    worker.on('listening', ({ address, port }) => {
      if (++listening === workers) announceReady('bare-http-proxy', { proxy: `http://${address}:${port}` }, { workers: pids });
    });
  }
  const stop = () => {
    for (const w of Object.values(cluster.workers)) w.kill();
    setTimeout(() => process.exit(0), 2000).unref();
    cluster.on('exit', () => Object.keys(cluster.workers).length === 0 && process.exit(0));
  };
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function serve() {
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: 64, timeout: 4_000, scheduling: 'lifo' });
  const proxy = httpProxy.createProxyServer({ target, agent, proxyTimeout: 30_000, xfwd: false });
  proxy.on('error', (_err, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('bad gateway');
    } else if (res) res.destroy();
  });

  const server = http.createServer((req, res) => proxy.web(req, res));
  listen(server).then((url) => {
    if (cluster.isWorker) return; // the primary announces, and stops the workers
    announceReady('bare-http-proxy', { proxy: url });
    exitWithParent(server);
  });
}
