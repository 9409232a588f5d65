/**
 * A bearer secret checked in constant time: the presented value and the secret are compared
 * as SHA-256 digests with `timingSafeEqual`, so neither the length nor any prefix of the
 * secret leaks through timing. The secret itself is not kept.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** `Authorization: Bearer <token>` → the token, or null for any other form. */
export function bearerOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match ? match[1]! : null;
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
