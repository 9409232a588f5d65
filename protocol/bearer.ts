/**
 * A bearer secret checked in constant time: the presented value and the secret are compared
 * as SHA-256 digests with `timingSafeEqual`, so neither the length nor any prefix of the
 * secret leaks through timing. The secret itself is not kept.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * The one reading of `Authorization: Bearer <token>` for every listener (gateway keys, the
 * admin, sync and metrics tokens, operator tokens): the scheme in any case, one or more spaces
 * (RFC 6750's `1*SP`; a tab is not a separator), the token (no whitespace), then optional
 * trailing spaces or tabs. Anything else is null.
 */
const BEARER = /^Bearer +(\S+)[ \t]*$/i;

/** `Authorization: Bearer <token>` → the token, or null for any other form (see {@link BEARER}). */
export function bearerOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  // The usual exact form (`Bearer ` + visible ASCII) without a regular expression (the
  // gateway reads one per call); anything else takes the full pattern.
  if (header.length > 7 && header.startsWith('Bearer ')) {
    let i = 7;
    while (i < header.length) {
      const c = header.charCodeAt(i);
      if (c <= 0x20 || c >= 0x7f) break;
      i++;
    }
    if (i === header.length) return header.slice(7);
  }
  return BEARER.exec(header)?.[1] ?? null;
}

export class BearerSecret {
  private readonly digest: Buffer;

  constructor(secret: string) {
    this.digest = digest(secret);
  }

  /** Whether the `Authorization` header carries exactly this secret. */
  matches(header: string | undefined): boolean {
    const presented = bearerOf(header);
    return presented !== null && timingSafeEqual(digest(presented), this.digest);
  }
}

/**
 * The metrics token's file in the data dir: control creates it (0600) on first start, and a
 * gateway on the same data dir reads it, unless `metricsToken` (`SVC_METRICS_TOKEN`) is set.
 */
export const METRICS_TOKEN_FILE = 'metrics.token';
