'use strict';
/**
 * The bench upstream: answers every request with the same small JSON document once the
 * request body (a 200-byte JSON POST in the bench) has been read.
 */
const http = require('node:http');
const { announceReady, exitWithParent, listen } = require('./common');

const BODY = Buffer.from(JSON.stringify({ ok: true, id: 'bench', result: { tokens: 42, text: 'hello from upstream' } }));

const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': BODY.length });
    res.end(BODY);
  });
});
// Longer than every client's idle-socket timeout, so pooled sockets are never closed under them.
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

listen(server).then((url) => {
  announceReady('upstream', { upstream: url });
  exitWithParent(server);
});
