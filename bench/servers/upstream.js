'use strict';
/**
 * The bench upstream: answers every request once its body (a 200-byte JSON POST in the bench)
 * has been read. `…/size/<bytes>` answers a JSON document of exactly that many bytes (the
 * response-size phases); any other path the same small 76-byte document.
 */
const http = require('node:http');
const { announceReady, exitWithParent, listen } = require('./common');

const BODY = Buffer.from(JSON.stringify({ ok: true, id: 'bench', result: { tokens: 42, text: 'hello from upstream' } }));
const SIZED = /\/size\/(\d{1,8})$/;
const MAX_SIZE = 16 * 1024 * 1024;
const bodies = new Map();

/** A JSON document of exactly `bytes` bytes (at least 12), built once per size. */
function sized(bytes) {
  let body = bodies.get(bytes);
  if (body === undefined) {
    const pad = Math.max(0, bytes - '{"pad":""}'.length);
    body = Buffer.from(`{"pad":"${'x'.repeat(pad)}"}`);
    bodies.set(bytes, body);
  }
  return body;
}

const server = http.createServer((req, res) => {
  const match = SIZED.exec(req.url ?? '');
  const body = match !== null && Number(match[1]) <= MAX_SIZE ? sized(Number(match[1])) : BODY;
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
});
// Longer than every client's idle-socket timeout, so pooled sockets are never closed under them.
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

listen(server).then((url) => {
  announceReady('upstream', { upstream: url });
  exitWithParent(server);
});
