/**
 * Opaque public ids (docs/design.md §7: per-endpoint identifiers are not published during beta).
 * Each id is a prefix and the first characters of the base58 HMAC-SHA256 of the internal id,
 * keyed by a per-database secret (`store.publicReads.idSecret`): stable across restarts,
 * different on every install, and not reversible or guessable from endpoint names.
 */
import { createHmac } from 'node:crypto';
import { encodeBase58 } from './base58';

/** Characters of base58 kept after the prefix (12 ≈ 70 bits; 16 ≈ 93 bits). */
const PROVIDER_ID_CHARS = 12;
const CALL_ID_CHARS = 16;
const GATEWAY_ID_CHARS = 8;
/** Ids are memoised up to this many per kind (endpoints and gateways are few; calls are not). */
const MEMO_LIMIT = 10_000;

export class OpaqueIds {
  private readonly secret: Buffer;
  private readonly memo = new Map<string, string>();

  constructor(secret: Buffer) {
    this.secret = secret;
  }

  /** `prv_` + 12 base58 characters for an endpoint id. */
  provider(endpointId: string): string {
    return this.derive('prv', endpointId, PROVIDER_ID_CHARS, true);
  }

  /** `call_` + 16 base58 characters for a gateway call id. */
  call(callId: string): string {
    return this.derive('call', callId, CALL_ID_CHARS, false);
  }

  /** `gw_` + 8 base58 characters for a gateway id (gateway ids often carry host names). */
  gateway(gatewayId: string): string {
    return this.derive('gw', gatewayId, GATEWAY_ID_CHARS, true);
  }

  private derive(kind: string, raw: string, chars: number, memoise: boolean): string {
    const key = `${kind}:${raw}`;
    const hit = this.memo.get(key);
    if (hit !== undefined) return hit;
    // The kind is part of the message, so the same string never maps to related ids of two kinds.
    const digest = createHmac('sha256', this.secret).update(key).digest();
    const id = `${kind}_${encodeBase58(digest).slice(0, chars)}`;
    if (memoise && this.memo.size < MEMO_LIMIT) this.memo.set(key, id);
    return id;
  }
}
