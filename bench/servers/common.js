'use strict';
/**
 * Shared by the bench's own server processes: announce readiness with the same one-line
 * protocol as `svcctl serve` under SVC_SUPERVISED, exit when the parent's stdin pipe closes, and
 * serve one port from one process or from several (`serveOnePort`).
 */
// The module is the cluster object itself (its types declare it as the default export only).
const cluster = /** @type {import('node:cluster').Cluster} */ (/** @type {unknown} */ (require('node:cluster')));

const READY_PREFIX = 'svc-ready ';

/** `extra`: more fields for the ready line (e.g. a server's worker pids). */
function announceReady(role, urls, extra = {}) {
  process.stdout.write(READY_PREFIX + JSON.stringify({ role, pid: process.pid, urls, ...extra }) + '\n');
}

function exitWithParent(server) {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    if (typeof server.closeAllConnections === 'function') server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function listen(server, port = 0, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const { address, port: bound } = server.address();
      resolve(`http://${address}:${bound}`);
    });
  });
}

/**
 * Serve `makeServer()`'s server on a free loopback port and announce it as `role`. With
 * BENCH_PROXY_WORKERS=N (N > 1), N node:cluster workers serve the one port (the primary hands out
 * connections round-robin, as svc's gateway workers do): the primary announces once all of them
 * listen, its ready line listing their pids (`workers`), and stops them when the parent goes; a
 * worker exits with the primary.
 * @param {string} role
 * @param {() => import('node:http').Server} makeServer
 */
function serveOnePort(role, makeServer) {
  const workers = Number(process.env.BENCH_PROXY_WORKERS || 1);
  if (workers > 1 && cluster.isPrimary) {
    superviseWorkers(role, workers);
    return;
  }
  const server = makeServer();
  listen(server).then((url) => {
    if (cluster.isWorker) return;
    announceReady(role, { proxy: url });
    exitWithParent(server);
  });
}

/** @param {string} role @param {number} workers */
function superviseWorkers(role, workers) {
  const pids = [];
  let listening = 0;
  for (let i = 0; i < workers; i++) {
    const worker = cluster.fork();
    pids.push(worker.process.pid);
    worker.on('listening', ({ address, port }) => {
      if (++listening === workers) announceReady(role, { proxy: `http://${address}:${port}` }, { workers: pids });
    });
  }
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    setTimeout(() => process.exit(0), 2000).unref();
    cluster.on('exit', () => Object.keys(cluster.workers ?? {}).length === 0 && process.exit(0));
  };
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

module.exports = { announceReady, exitWithParent, listen, serveOnePort };
