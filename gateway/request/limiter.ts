/**
 * The response headers that describe the gateway's per-key and per-address limits (docs/design.md
 * §3.5; IETF draft-ietf-httpapi-ratelimit-headers-11). The buckets themselves are
 * `runtime/token-bucket.ts`, shared with control's public API.
 */
import type { LimitPolicy, TakeResult } from '../../runtime/token-bucket';

/** A structured-field String (RFC 8941 §3.3.3): printable ASCII, `"` and `\` escaped. */
function sfString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.charCodeAt(0);
    if (ch.length !== 1 || code < 0x20 || code > 0x7e) {
      out += '?';
    } else if (ch === '"' || ch === '\\') {
      out += '\\' + ch;
    } else {
      out += ch;
    }
  }
  return out + '"';
}

/** Policies are long-lived objects; their header text is formatted once per policy name. */
const policyTexts = new WeakMap<LimitPolicy, { forName: string; name: string; policy: string }>();

function policyText(policyName: string, policy: LimitPolicy): { name: string; policy: string } {
  let text = policyTexts.get(policy);
  if (text === undefined || text.forName !== policyName) {
    const name = sfString(policyName);
    text = {
      forName: policyName,
      name,
      policy: `${name};q=${Math.floor(policy.count)};w=${Math.floor(policy.windowSeconds)};svc-burst=${Math.floor(policy.burst)}`,
    };
    policyTexts.set(policy, text);
  }
  return text;
}

/**
 * `RateLimit-Policy` and `RateLimit` for one policy, plus `Retry-After` when the call was
 * rejected. `svc-burst` is a vendor parameter (draft-11 §3.1) carrying the bucket size.
 *
 * ```
 * RateLimit-Policy: "key";q=60;w=60;svc-burst=10
 * RateLimit: "key";r=5;t=1
 * Retry-After: 1            (only when rejected)
 * ```
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 * @see RFC 9110 §10.2.3 (Retry-After)
 */
export function rateLimitHeaders(policyName: string, policy: LimitPolicy, result: TakeResult): Record<string, string> {
  const text = policyText(policyName, policy);
  const headers: Record<string, string> = {
    'ratelimit-policy': text.policy,
    ratelimit: `${text.name};r=${result.remaining};t=${result.allowed ? result.resetSeconds : result.retryAfterSeconds}`,
  };
  if (!result.allowed) headers['retry-after'] = String(Math.max(1, result.retryAfterSeconds));
  return headers;
}
