'use strict';
/**
 * Baseline: a bare http-proxy 1.18.1 server with the gateway's upstream agent settings
 * (keep-alive, maxSockets 256, maxFreeSockets 64, 4 s idle timeout, LIFO) and proxyTimeout.
 * Usage: node bare-proxy.js <upstream base URL>
 *
 * BENCH_PROXY_WORKERS=N (default 1): N such servers on one port under node:cluster
 * (`serveOnePort`), the baseline for what two Node processes cost against one
 * (`npm run bench:workers`).
 */
const http = require('node:http');
const httpProxy = require('http-proxy');
const { serveOnePort } = require('./common');

const target = process.argv[2];
if (!target) throw new Error('usage: bare-proxy.js <upstream base URL>');
const maxSockets = Number(process.env.BENCH_MAX_SOCKETS || 256);

serveOnePort('bare-http-proxy', () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: 64, timeout: 4_000, scheduling: 'lifo' });
  const proxy = httpProxy.createProxyServer({ target, agent, proxyTimeout: 30_000, xfwd: false });
  proxy.on('error', (_err, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end('bad gateway');
    } else if (res) res.destroy();
  });

  return http.createServer((req, res) => proxy.web(req, res));
});
