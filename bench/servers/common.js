'use strict';
/**
 * Shared by the bench's own server processes: announce readiness with the same one-line
 * protocol as `svcctl serve` under SVC_SUPERVISED, and exit when the parent's stdin pipe closes.
 */
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

module.exports = { announceReady, exitWithParent, listen };
