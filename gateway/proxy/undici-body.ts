/**
 * The caller's request as the undici engine hands it to undici: the body as a `Readable` the
 * engine pushes the caller's chunks into, and the headers without the framing field undici sets.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';

/**
 * The caller's request body as undici reads it. `push()` answers false once 16 KiB wait that
 * undici has not taken (its socket is full, or the call still waits for a connection); `wanted`
 * runs once when undici asks for more.
 */
export class RequestBody extends Readable {
  wanted: (() => void) | null = null;

  override _read(): void {
    const wanted = this.wanted;
    if (wanted !== null) {
      this.wanted = null;
      wanted();
    }
  }
}

/**
 * Request headers for undici: `headers.ts`'s, without `Transfer-Encoding`. undici refuses that
 * field and frames a body without a declared length as chunked itself.
 */
export function requestHeaders(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  if (headers['transfer-encoding'] === undefined) return headers;
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (name !== 'transfer-encoding') out[name] = headers[name];
  return out;
}
