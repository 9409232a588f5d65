/**
 * Limits that hold across gateways (`limits.mode` = `split`): control divides every key's limit
 * among the live gateways, in proportion to their weights, and pushes each gateway its share
 * (one number, not one per key); the gateway multiplies every key's limit and burst by it.
 *
 * A gateway is live while it is connected and has acked within `sync.leaseS` (an update, or the
 * lease renewal it answers each ping with). Control re-divides when one joins, leaves, lets its
 * lease lapse or is weighted. A gateway cut off from control keeps its last share (fail
 * static), so while it is away the gateways still in touch enforce shares summing to 1 and the
 * total admitted can exceed a key's limit by at most the shares of those cut off.
 */
import type { LimitsMode } from '../../protocol/gateways';

export interface Member {
  id: string;
  weight: number;
}

/** Shares are rounded to this many decimal places, so they print and compare stably. */
const SHARE_DECIMALS = 1e9;

/**
 * Each member's share: its weight over the sum of the members' weights (`split`), or 1 each
 * (`per-gateway`). Rounded down, so the shares never sum to more than 1.
 */
export function divideShares(members: readonly Member[], mode: LimitsMode): Map<string, number> {
  const out = new Map<string, number>();
  if (mode === 'per-gateway') {
    for (const m of members) out.set(m.id, 1);
    return out;
  }
  const total = members.reduce((sum, m) => sum + m.weight, 0);
  for (const m of members) out.set(m.id, shareOf(m.weight, total));
  return out;
}

/** `weight / total`, rounded down to 9 decimals, at least 1e-9 and at most 1. */
export function shareOf(weight: number, total: number): number {
  if (!(total > 0)) return 1;
  const share = Math.floor((weight / total) * SHARE_DECIMALS) / SHARE_DECIMALS;
  return Math.min(1, Math.max(1 / SHARE_DECIMALS, share));
}

/** The weights of `members` and `weight`, a gateway's own, counted once whether or not it is among them. */
export function weightWith(members: readonly Member[], gatewayId: string, weight: number): number {
  return members.reduce((sum, m) => (m.id === gatewayId ? sum : sum + m.weight), weight);
}

/** How often control checks for lapsed leases: a quarter of the lease, at most once a second. */
export function leaseCheckIntervalMs(leaseS: number): number {
  return Math.max(50, Math.min(1_000, (leaseS * 1000) / 4));
}

/**
 * How often control pings each stream: every `SYNC_PING_INTERVAL_MS`, or three times per lease
 * when the lease is shorter, so a gateway that answers each ping keeps its lease.
 */
export function pingIntervalMs(leaseS: number, defaultMs: number): number {
  return Math.max(100, Math.min(defaultMs, Math.floor((leaseS * 1000) / 3)));
}

/** The members of a division, as a string that changes when any of them or its weight does. */
export function membersKey(members: readonly Member[]): string {
  return members.map((m) => `${m.id} ${m.weight}`).join('\n');
}
