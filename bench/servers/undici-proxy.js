'use strict';
/**
 * Baseline: a bare forwarder on undici's Pool.stream, writing the upstream answer straight into
 * the caller's response. Usage: node undici-proxy.js <upstream base URL>
 */
const http = require('node:http');
const { Pool } = require('undici');
const { announceReady, exitWithParent, listen } = require('./common');

const base = new URL(process.argv[2]);
const basePath = base.pathname.replace(/\/$/, '');
const connections = Number(process.env.BENCH_MAX_SOCKETS || 256);
const pool = new Pool(base.origin, { connections, pipelining: 1, keepAliveTimeout: 4_000, headersTimeout: 30_000, bodyTimeout: 30_000 });

// Hop-by-hop request fields undici refuses or that must not cross a proxy.
const DROP_REQUEST = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
  'host',
  'expect',
]);
const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

/** @param {string[]} raw */
function requestHeaders(raw) {
  /** @type {Record<string, string>} */
  const out = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (!DROP_REQUEST.has(name)) out[name] = raw[i + 1];
  }
  return out;
}

const server = http.createServer((req, res) => {
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  pool.stream(
    { path: basePath + req.url, method: req.method, headers: requestHeaders(req.rawHeaders), body: hasBody ? req : null },
    ({ statusCode, headers }) => {
      /** @type {import('node:http').OutgoingHttpHeaders} */
      const out = {};
      for (const name in headers) if (!DROP_RESPONSE.has(name)) out[name] = headers[name];
      res.writeHead(statusCode, out);
      return res;
    },
    (err) => {
      if (!err) return;
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('bad gateway');
      } else res.destroy();
    },
  );
});
listen(server).then((url) => {
  announceReady('undici', { proxy: url });
  exitWithParent(server);
});
