/** Bind an http.Server and report the URL it is reachable on (port 0 picks a free port). */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function listen(server: Server, port: number, host: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const addr = server.address() as AddressInfo;
      const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolvePromise(`http://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost === '[::]' ? '[::1]' : shownHost}:${addr.port}`);
    });
  });
}

/** How long in-flight requests may finish on close before their sockets are cut. @default 2000 */
export const CLOSE_GRACE_MS = 2_000;

/** Close a server and drop its idle keep-alive connections so shutdown is prompt. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolvePromise) => {
    if (!server.listening) {
      resolvePromise();
      return;
    }
    const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolvePromise();
    });
    server.closeIdleConnections();
  });
}
