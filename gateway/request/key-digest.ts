/**
 * Admission's key digest, remembered per connection (gateway/request/handler.ts `admit`).
 */
import { hash } from 'node:crypto';
import type { Socket } from 'node:net';
import { isWellFormedKey } from '../../protocol/keys';

/**
 * The last well-formed bearer seen on each connection and its SHA-256: a keep-alive connection
 * nearly always sends the same key, and the hash is the costliest step of admission (~0.7 µs).
 * The bearer is only compared, never written anywhere; the entry goes with the connection. The
 * key itself is still looked up in the current state on every call, so a revoked or expired key
 * is refused as before.
 */
const lastDigest = new WeakMap<Socket, { bearer: string; digest: string }>();

/** The SHA-256 (hex) of a well-formed `bearer` sent on `socket`, or null when it is not a key's shape. */
export function digestOf(socket: Socket, bearer: string): string | null {
  const last = lastDigest.get(socket);
  if (last !== undefined && last.bearer === bearer) return last.digest;
  if (!isWellFormedKey(bearer)) return null;
  const digest = hash('sha256', bearer, 'hex');
  if (last !== undefined) {
    last.bearer = bearer;
    last.digest = digest;
  } else lastDigest.set(socket, { bearer, digest });
  return digest;
}
