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

/** `members` with gateway `gatewayId` of `weight` among them, once, whether or not it was (it may not be live yet). */
export function membersWith(members: readonly Member[], gatewayId: string, weight: number): Member[] {
  return [...members.filter((m) => m.id !== gatewayId), { id: gatewayId, weight }];
}

/** The sum of the members' weights. */
export const totalWeight = (members: readonly Member[]): number => members.reduce((sum, m) => sum + m.weight, 0);

/**
 * Gateway `id`'s part of the pool's free capital (a `coverage` line's `allowance`), among
 * `members` (`id` one of them): the free capital divided by weight in whole calls of `unit`
 * (the largest covered call), each member's whole calls rounded down and those left over given
 * one each to the members with the largest remainders (then by id), plus its weight's part of
 * what is less than one call. The parts never add up to more than `free`, and whenever `free`
 * holds one call some gateway can cover it (divided by weight alone, two gateways would each
 * hold half of the one call left, and neither could cover it though coverage is on).
 */
export function coverageAllowance(free: number, unit: number, members: readonly Member[], id: string): number {
  const total = totalWeight(members);
  const weight = members.find((m) => m.id === id)?.weight ?? 0;
  if (!(free > 0) || !(total > 0) || !(weight > 0)) return 0;
  if (!(unit > 0)) return Math.floor((free * weight) / total);
  const calls = Math.floor(free / unit);
  const parts = members.map((m) => {
    const quota = (calls * m.weight) / total;
    return { id: m.id, weight: m.weight, whole: Math.floor(quota), remainder: quota - Math.floor(quota) };
  });
  const left = calls - parts.reduce((sum, p) => sum + p.whole, 0);
  const extra = parts
    .filter((p) => p.weight > 0)
    .sort((a, b) => b.remainder - a.remainder || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, left)
    .some((p) => p.id === id);
  const whole = parts.find((p) => p.id === id)!.whole + (extra ? 1 : 0);
  return whole * unit + Math.floor(((free - calls * unit) * weight) / total);
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
