/**
 * The caller's address for per-address limits, one rule for every listener (the gateway's
 * keyless limit, the public read API and indexer, application submissions).
 *
 * With `trustedHops` = 0 it is the socket's address: a caller-supplied `X-Forwarded-For`
 * changes nothing. With N trusted proxies in front, each appends the address it saw, so the
 * client is the Nth non-empty entry from the right; entries left of it are the caller's own
 * and never read. When that entry is missing (fewer entries than trusted hops: the request did not come
 * through every proxy) or is not an IP address, the socket's address is used, so a short or
 * garbled header never picks the bucket.
 *
 * @see https://developer.mozilla.org/docs/Web/HTTP/Reference/Headers/X-Forwarded-For
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

/** What the rule reads of a request (an `IncomingMessage` has both). */
export interface AddressedRequest {
  socket: { remoteAddress?: string | undefined };
  headers: IncomingHttpHeaders;
}

/** Shown when the socket has no address (it closed). */
const UNKNOWN = 'unknown';

export function clientAddress(req: AddressedRequest, trustedHops: number): string {
  const socket = req.socket.remoteAddress ?? UNKNOWN;
  if (trustedHops <= 0) return socket;
  const header = req.headers['x-forwarded-for'];
  if (header === undefined) return socket;
  const entries = (Array.isArray(header) ? header.join(',') : header).split(',').filter((e) => e.trim() !== '');
  const entry = entries.length >= trustedHops ? bareAddress(entries[entries.length - trustedHops]!) : null;
  return entry ?? socket;
}

/**
 * One `X-Forwarded-For` entry as an address: trimmed, `[v6]` and `[v6]:port` unbracketed,
 * `v4:port` without the port; null when what is left is not an IP address.
 */
function bareAddress(raw: string): string | null {
  let text = raw.trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) return null;
    text = text.slice(1, end);
  } else if (text.indexOf(':') === text.lastIndexOf(':') && text.includes(':')) {
    text = text.slice(0, text.indexOf(':')); // one colon: IPv4 with a port
  }
  return isIP(text) === 0 ? null : text;
}
