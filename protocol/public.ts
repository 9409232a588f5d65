/**
 * Answers of the public read API ({api_url}, docs/design.md §7): providers, status, changelog. Built
 * by control (`control/public/`), read by `svc-monitor-sdk` and described by the public
 * OpenAPI document. Ids are opaque (`prv_…`, `gw_…`); amounts are integer micro-units.
 */
import { z } from 'zod';
import { PublicPool } from './lps';
import { SETTLER_STATES, settlerProgress } from './settlement';
import { Count, IsoTime, MicroAmount, Millis, StateVersion } from './wire';

/** Changelog entries per answer when `limit` is absent, and the most one answer holds. */
export const CHANGELOG_DEFAULT_LIMIT = 50;
export const CHANGELOG_MAX_LIMIT = 200;

// ---------------------------------------------------------------------------------------
// Providers

export const TIERS = ['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'] as const;
export const Tier = z.enum(TIERS);
export type Tier = z.infer<typeof Tier>;

export const Provider = z.strictObject({
  /** Opaque, stable id (`prv_…`); never the endpoint id or its upstream. */
  id: z.string().describe('opaque, stable provider id (prv_…)'),
  /** The operator's public name for the provider (`svcctl endpoints update ID --display-name`), or null. */
  display_name: z.string().nullable().describe("the operator's public name for the provider, or null"),
  tier: Tier,
  /** Covered failures / calls (calls exclude `client_error` and `caller_error`), over the window. 0 without calls. */
  failure_rate: z.number().min(0).max(1).describe('covered failures / calls over the window; 0 without calls'),
  /** Calls in the window, `client_error` and `caller_error` excluded (the failure-rate denominator). */
  calls: Count,
  /** Covered failures in the window (latency breach, server error, network error, schema mismatch). */
  failures: Count,
  /** Upstream 4xx answers in the window (the caller's fault: counted apart, not a failure). */
  client_errors: Count,
  /** Calls that failed by the caller's doing in the window (left early, body over the limit or stalled): not the provider's. */
  caller_errors: Count,
  window_h: z.number().int().min(1),
  /** From the latency histogram of the same calls; null without calls. */
  latency_ms: z.strictObject({ p50: Millis, p95: Millis, p99: Millis }).nullable(),
});
export type Provider = z.infer<typeof Provider>;

/** `GET {api_url}/api/v1/providers`. */
export const ProvidersAnswer = z.strictObject({
  providers: z.array(Provider),
  window_h: z.number().int().min(1),
  min_calls: z.number().int().min(1),
  thresholds: z.strictObject({ reliable_below: z.number().min(0).max(1), elevated_up_to: z.number().min(0).max(1) }),
  updated_at: IsoTime,
});
export type ProvidersAnswer = z.infer<typeof ProvidersAnswer>;

// ---------------------------------------------------------------------------------------
// Changelog

export const CHANGELOG_KINDS = ['flag', 'notice'] as const;
export const ChangelogKind = z.enum(CHANGELOG_KINDS);
export type ChangelogKind = z.infer<typeof ChangelogKind>;

/** A changelog entry as the public sees it (the operator's token name is not published). */
export const PublicChangelogEntry = z.strictObject({
  id: z.number().int().min(1),
  at: IsoTime,
  kind: ChangelogKind,
  text: z.string(),
});
export type PublicChangelogEntry = z.infer<typeof PublicChangelogEntry>;

/** Query of `GET {api_url}/api/v1/changelog`. */
export const PublicChangelogQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(CHANGELOG_MAX_LIMIT)
    .optional()
    .describe(`entries to return (default ${CHANGELOG_DEFAULT_LIMIT})`),
});

/** `GET {api_url}/api/v1/changelog`: newest first. */
export const PublicChangelogAnswer = z.strictObject({ entries: z.array(PublicChangelogEntry) });
export type PublicChangelogAnswer = z.infer<typeof PublicChangelogAnswer>;

// ---------------------------------------------------------------------------------------
// Status

/** The settler as the public sees it; `not_running` while no settler runs in control. */
export const SETTLER_PUBLIC_STATES = [...SETTLER_STATES, 'not_running'] as const;
export const SettlerPublicState = z.enum(SETTLER_PUBLIC_STATES);
export type SettlerPublicState = z.infer<typeof SettlerPublicState>;

export const PublicGateway = z.strictObject({
  /** Opaque gateway id (`gw_…`). */
  id: z.string(),
  connected: z.boolean(),
  snapshot_version: StateVersion,
  versions_behind: Count,
  last_seen: IsoTime,
  seen_ago_s: Count,
});
export type PublicGateway = z.infer<typeof PublicGateway>;

/** `GET {api_url}/api/v1/status` (and what `/status` renders as HTML). */
export const StatusAnswer = z.strictObject({
  /** `maintenance` while the flag is on; `degraded` while no gateway is connected. */
  status: z.enum(['operational', 'degraded', 'maintenance']),
  version: z.literal('v1'),
  updated_at: IsoTime,
  bootstrap: z.strictObject({
    database: z.strictObject({ ready: z.boolean(), schema_version: Count, schema_expected: Count }),
    pool: z.strictObject({ funded: z.boolean(), balance: MicroAmount, capital: PublicPool }),
    endpoints: z.strictObject({ registered: Count }),
    state_version: StateVersion,
    gateways: z.strictObject({ connected: Count, known: Count, list: z.array(PublicGateway) }),
  }),
  settler: z
    .strictObject({
      state: SettlerPublicState,
      cadence_ms: z.number().int().min(1).nullable(),
      batch_cap: z.number().int().min(1).nullable(),
    })
    .extend(settlerProgress('provider')),
  beta_gate: z.strictObject({ enabled: z.boolean(), since: IsoTime.nullable() }),
  maintenance: z.strictObject({ enabled: z.boolean(), note: z.string().nullable(), since: IsoTime.nullable() }),
  changelog: z.array(PublicChangelogEntry),
});
export type StatusAnswer = z.infer<typeof StatusAnswer>;
