/**
 * The sample provider of `svcctl up --sample` (and `npm start`): a small upstream in up's own
 * process, registered as the endpoint `sample`, so a fresh install has something to call.
 *
 * - `/ok` answers 200 with a small JSON body;
 * - `/fail` answers 500 (a `server_error` outcome, refunded);
 * - `/slow?ms=N` answers 200 after N ms (0–10000, default 1000; past the SLA of 500 ms it is a
 *   `latency_breach`);
 * - `/reset` resets the connection (a `network_error`);
 * - anything else is 404.
 *
 * Each start registers it again with the port it got this time. An endpoint named `sample`
 * that is not the sample (another display name or upstream) is left alone and `up` exits 1.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { EndpointChange, EndpointView } from '../protocol/admin';
import { ApiError, type AdminClient } from './client';
import { CliError } from './exit-codes';

export const SAMPLE_ENDPOINT_ID = 'sample';
/** How the sample shows on the pages and in `svcctl endpoints list`. */
export const SAMPLE_DISPLAY_NAME = 'Sample provider (local, for trying svc)';
/** The terms the sample is registered with. */
export const SAMPLE_TERMS = {
  price: 1_000,
  premium: 100,
  sla_ms: 500,
  timeout_ms: 5_000,
  methods: ['GET', 'POST'],
  // Calls spend the account's prepaid balance: a key whose account holds no premium gets 402.
  billing: 'prepaid',
} as const;
/** Most `/slow` waits, ms. */
export const SAMPLE_MAX_SLOW_MS = 10_000;
const DEFAULT_SLOW_MS = 1_000;

export interface SampleUpstream {
  url: string;
  close(): Promise<void>;
}

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** `ms` of `/slow`: a whole number of milliseconds up to {@link SAMPLE_MAX_SLOW_MS}, else null. */
export function slowMs(raw: string | null): number | null {
  if (raw === null) return DEFAULT_SLOW_MS;
  if (!/^\d{1,5}$/.test(raw)) return null;
  const ms = Number(raw);
  return ms <= SAMPLE_MAX_SLOW_MS ? ms : null;
}

/** Start the sample upstream on `host`, a free port. */
export async function startSampleUpstream(host: string): Promise<SampleUpstream> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sample');
    req.resume();
    req.on('end', () => {
      switch (url.pathname) {
        case '/ok':
          return answer(res, 200, { sample: true, ok: true, at: new Date().toISOString() });
        case '/fail':
          return answer(res, 500, { sample: true, error: 'the sample provider fails on /fail, as asked' });
        case '/reset':
          return void req.socket.destroy();
        case '/slow': {
          const ms = slowMs(url.searchParams.get('ms'));
          if (ms === null) return answer(res, 400, { sample: true, error: `ms must be a whole number from 0 to ${SAMPLE_MAX_SLOW_MS}` });
          const timer = setTimeout(() => {
            timers.delete(timer);
            answer(res, 200, { sample: true, ok: true, waited_ms: ms });
          }, ms);
          timers.add(timer);
          return;
        }
        default:
          return answer(res, 404, { sample: true, error: 'the sample provider answers /ok, /fail, /slow?ms=N and /reset' });
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Whether `endpoint` is the sample (as this function registers it), not someone's own `sample`. */
export function isSample(endpoint: Pick<EndpointView, 'display_name' | 'upstream'>): boolean {
  if (endpoint.display_name !== SAMPLE_DISPLAY_NAME) return false;
  try {
    const host = new URL(endpoint.upstream).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
  } catch {
    return false;
  }
}

/**
 * Register the sample at `upstream`: add it, or point the existing sample at the new port.
 * Throws `CliError` (exit 1) when an endpoint named `sample` is someone else's.
 */
export async function registerSample(client: AdminClient, upstream: string): Promise<void> {
  const { version } = await putSample(client, upstream);
  // Callable once the banner shows it: wait until the gateway applied the change.
  await client.post('/_admin/v1/sync/wait', { version, timeout_ms: 10_000 });
}

/** Add the sample, or re-point the existing one; the change as control answered it (its state version). */
async function putSample(client: AdminClient, upstream: string): Promise<EndpointChange> {
  let existing: EndpointView | null = null;
  try {
    existing = await client.get<EndpointView>(`/_admin/v1/endpoints/${SAMPLE_ENDPOINT_ID}`);
  } catch (err) {
    if (!(err instanceof ApiError && err.problem.status === 404)) throw err;
  }
  if (existing === null) {
    return client.post<EndpointChange>('/_admin/v1/endpoints', {
      id: SAMPLE_ENDPOINT_ID,
      upstream,
      display_name: SAMPLE_DISPLAY_NAME,
      ...SAMPLE_TERMS,
    });
  }
  if (!isSample(existing)) {
    throw new CliError(
      `an endpoint named ${SAMPLE_ENDPOINT_ID} exists (upstream ${existing.upstream}) and is not svc's sample; ` +
        `start without --sample, or remove it first (svcctl endpoints remove ${SAMPLE_ENDPOINT_ID})`,
    );
  }
  return client.patch<EndpointChange>(`/_admin/v1/endpoints/${SAMPLE_ENDPOINT_ID}`, { upstream, ...SAMPLE_TERMS });
}
