/**
 * Bearer-token check for the admin and sync APIs. Tokens are compared by SHA-256 digest with
 * `timingSafeEqual`, so neither length nor content leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../protocol/errors';

/** A token by name: the token itself, or only its SHA-256 (a token made by another control on a shared database). */
export type NamedToken = { name: string; token: string } | { name: string; digest: Buffer };

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

export class TokenAuth {
  private readonly tokens: { name: string; digest: Buffer }[];
  private readonly realm: string;

  constructor(realm: string, tokens: NamedToken[]) {
    this.realm = realm;
    this.tokens = tokens.map((t) => ({ name: t.name, digest: 'token' in t ? digest(t.token) : t.digest }));
  }

  /** The token's name, or throws 401 `svc_unauthorized`. */
  authenticate(req: IncomingMessage): string {
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match) {
      const presented = digest(match[1]!);
      let found: string | null = null;
      for (const t of this.tokens) if (timingSafeEqual(t.digest, presented)) found = t.name;
      if (found !== null) return found;
    }
    throw new SvcError(
      'svc_unauthorized',
      header === undefined ? `missing bearer token for the ${this.realm} API` : `invalid bearer token for the ${this.realm} API`,
      { headers: { 'www-authenticate': `Bearer realm="${this.realm}"` } },
    );
  }
}
