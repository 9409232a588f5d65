'use strict';
/**
 * The svc stack as the bench drives it: control and gateways as `svcctl serve` child
 * processes, the admin API (token from <data dir>/admin.token), and gateway readiness.
 */
const fs = require('node:fs');
const path = require('node:path');
const { Agent, request } = require('undici');
const { internal } = require('./internals');
const { Proc } = require('./proc');

const { ROOT, distDir } = require('./app');

const cli = () => path.join(distDir(), 'cli', 'index.js');

const agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 });

/**
 * One request; the body answered, parsed when it is JSON.
 * @param {string} method
 * @param {string} url
 * @param {{ headers?: Record<string, string>, json?: unknown, dispatcher?: import('undici').Dispatcher }} [options]
 * @returns {Promise<{ status: number, body: any }>}
 */
async function http(method, url, { headers = {}, json, dispatcher = agent } = {}) {
  const res = await request(url, {
    method,
    dispatcher,
    headers: json === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.body.text();
  /** @type {any} */
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.statusCode, body };
}

class Admin {
  constructor(controlUrl, dataDir) {
    this.base = controlUrl;
    this.token = fs.readFileSync(path.join(dataDir, 'admin.token'), 'utf8').trim();
  }

  async call(method, route, json, expect = [200, 201]) {
    const res = await http(method, this.base + route, { headers: { authorization: `Bearer ${this.token}` }, json });
    if (!expect.includes(res.status)) throw new Error(`${method} ${route} → ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  addEndpoint(id, upstream) {
    return this.call('POST', '/_admin/v1/endpoints', { id, upstream, timeout_ms: 30_000, sla_ms: 5_000 });
  }

  setFlag(name, value) {
    return this.call('PUT', `/_admin/v1/flags/${name}`, { value, note: 'bench' });
  }

  issueKey(body) {
    return this.call('POST', '/_admin/v1/keys', body);
  }

  revokeKey(id) {
    return this.call('POST', `/_admin/v1/keys/${id}/revoke`, undefined);
  }

  /** Block until every connected gateway applied `version` (control's own propagation wait). */
  waitSync(version, timeoutMs = 30_000) {
    return this.call('POST', '/_admin/v1/sync/wait', { version, timeout_ms: timeoutMs });
  }
}

/** `svcctl` arguments for a control on `dataDir`, on loopback, every listener on a free port. */
function controlArgs(dataDir) {
  return ['serve', 'control', '--data-dir', dataDir, ...internal('protocol/runtime').CONTROL_ON_FREE_PORTS];
}

function startControl({ dataDir, cpu, logDir, name = 'control', env = {} }) {
  const proc = new Proc(name, [process.execPath, cli(), ...controlArgs(dataDir)], {
    cpu,
    cwd: ROOT,
    log: path.join(logDir, `${name}.log`),
    env,
  });
  return proc;
}

/**
 * A gateway process on `engine` (`svcctl serve gateway --engine`), attached to `controlUrl`, or
 * with `controlUrls` to each control in turn (one `--control` per URL, the preferred one first).
 */
function startGateway({
  dataDir,
  controlUrl,
  controlUrls = [controlUrl],
  cpu,
  logDir,
  id,
  engine = 'http-proxy',
  name = 'gateway',
  nodeArgs = [],
  env = {},
}) {
  return new Proc(
    name,
    [
      process.execPath,
      ...nodeArgs,
      cli(),
      'serve',
      'gateway',
      '--data-dir',
      dataDir,
      '--gateway-port',
      '0',
      ...controlUrls.flatMap((url) => ['--control', url]),
      '--id',
      id,
      '--engine',
      engine,
    ],
    { cpu, cwd: ROOT, log: path.join(logDir, `${name}.log`), env },
  );
}

/**
 * Poll the gateway's detailed /health (with the metrics token from `dataDir`) until `done`
 * holds for its body; `what` names the wait in the error after `timeoutMs`.
 */
async function waitGatewayHealth(gatewayUrl, dataDir, done, what, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  const probe = new Agent({ pipelining: 0 });
  const metricsToken = fs.readFileSync(path.join(dataDir, 'metrics.token'), 'utf8').trim();
  try {
    let last = null;
    while (Date.now() < deadline) {
      try {
        const res = await http('GET', gatewayUrl + '/health', { dispatcher: probe, headers: { authorization: `Bearer ${metricsToken}` } });
        last = res.body;
        if (res.status === 200 && done(res.body)) return { health: res.body, at: Date.now() };
      } catch (err) {
        last = String(err);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`gateway ${gatewayUrl}: ${what} not reached after ${timeoutMs} ms; last health: ${JSON.stringify(last)}`);
  } finally {
    await probe.close();
  }
}

/** Wait until the gateway is ready at `version` or later. */
function waitGatewayVersion(gatewayUrl, version, dataDir, timeoutMs = 300_000) {
  return waitGatewayHealth(gatewayUrl, dataDir, (h) => h.ready && h.snapshot_version >= version, `ready at version ${version}`, timeoutMs);
}

module.exports = { Admin, controlArgs, http, startControl, startGateway, waitGatewayHealth, waitGatewayVersion, ROOT };
