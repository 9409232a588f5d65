/**
 * The one schema for every setting. Types are inferred from it; `load.ts` validates once
 * and freezes. Each leaf's `.describe()` text is what an error message calls "allowed".
 */
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { isPostgresUrl } from '../protocol/database-url';
import { LIMITS_MODES } from '../protocol/gateways';
import { GATEWAY_ENGINES, GATEWAY_ID_RULE, GatewayId, workerIdRoom } from '../protocol/snapshot';
import * as D from './defaults';

const port = (def: number) => z.number().int().min(0).max(65535).default(def).describe('an integer from 0 to 65535 (0 picks a free port)');
const posInt = (def: number, max = Number.MAX_SAFE_INTEGER) =>
  z.number().int().min(1).max(max).default(def).describe(`an integer from 1 to ${max}`);
/** `gateway.workers`: a count, or `auto` (the CPUs this process may use), resolved when the settings load. */
const workers = z
  .union([z.number().int().min(1).max(D.MAX_GATEWAY_WORKERS), z.literal('auto')])
  .default(D.DEFAULT_GATEWAY_WORKERS)
  .transform((w) => (w === 'auto' ? Math.min(availableParallelism(), D.MAX_GATEWAY_WORKERS) : w))
  .describe(
    `an integer from 1 to ${D.MAX_GATEWAY_WORKERS}, or auto (the CPUs available, os.availableParallelism()): gateway processes serving one port, each a gateway <id>.<n> to control`,
  );
const fraction = (def: number) => z.number().min(0).max(1).default(def).describe('a number from 0 to 1');
const token = z
  .string()
  .min(32)
  .max(256)
  .regex(/^[\x21-\x7e]+$/)
  .optional()
  .describe('a printable string of 32 to 256 characters without spaces');

export const ConfigSchema = z
  .object({
    host: z.string().min(1).default(D.DEFAULT_HOST).describe('a hostname or IP address to bind'),
    dataDir: z.string().min(1).default(D.DEFAULT_DATA_DIR).describe('a directory path'),
    // Control's store: absent, null or empty is SQLite at <dataDir>/control.db (null once loaded), a URL PostgreSQL.
    databaseUrl: z
      .string()
      .refine((url) => url === '' || isPostgresUrl(url))
      .nullish()
      .transform((url) => (url === undefined || url === null || url === '' ? null : url))
      .describe(
        'empty (SQLite at <dataDir>/control.db) or a postgres:// or postgresql:// URL (@ / ? # in the user or password percent-encoded)',
      ),
    controlUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe('an http(s) URL of the control admin/sync listener'),
    // Gateways only: controls on one database, dialled in order; when set, gateways use it instead of controlUrl.
    controlUrls: z
      .array(z.url({ protocol: /^https?$/ }))
      .min(1)
      .optional()
      .describe(
        'a list of http(s) URLs of control admin/sync listeners sharing one database (env: comma-separated), tried in order by gateways',
      ),
    adminToken: token,
    syncToken: token,
    metricsToken: token,
    logLevel: z.enum(['debug', 'info', 'warn', 'error']).default(D.DEFAULT_LOG_LEVEL).describe('one of debug, info, warn, error'),
    gateway: z
      .object({
        port: port(D.DEFAULT_GATEWAY_PORT),
        id: GatewayId.optional().describe(GATEWAY_ID_RULE),
        bodyLimitBytes: posInt(D.DEFAULT_BODY_LIMIT_BYTES, 1024 * 1024 * 1024),
        headersTimeoutMs: posInt(D.DEFAULT_HEADERS_TIMEOUT_MS, 600_000),
        requestTimeoutMs: posInt(D.DEFAULT_REQUEST_TIMEOUT_MS, 3_600_000),
        clientBodyTimeoutMs: posInt(D.DEFAULT_CLIENT_BODY_TIMEOUT_MS, 3_600_000),
        maxHeaders: posInt(D.DEFAULT_GATEWAY_MAX_HEADERS, 1_000),
        keepAliveTimeoutMs: posInt(D.DEFAULT_KEEPALIVE_TIMEOUT_MS, 600_000),
        upstreamMaxSockets: posInt(D.DEFAULT_UPSTREAM_MAX_SOCKETS, 65_535),
        engine: z
          .enum(GATEWAY_ENGINES)
          .default(D.DEFAULT_GATEWAY_ENGINE)
          .describe(`one of ${GATEWAY_ENGINES.join(', ')}`),
        maintenanceRetryAfterS: posInt(D.DEFAULT_MAINTENANCE_RETRY_AFTER_S, 86_400),
        trustedProxyHops: z.number().int().min(0).max(10).default(0).describe('an integer from 0 to 10'),
        workers,
      })
      .strict()
      .prefault({})
      .superRefine((g, ctx) => {
        // Each worker is the gateway `<id>.<n>`, itself a gateway id: the configured id must leave room for the suffix.
        const room = workerIdRoom(g.workers);
        if (g.id !== undefined && g.workers > 1 && g.id.length > room)
          ctx.addIssue({
            code: 'custom',
            path: ['id'],
            message: `with gateway.workers ${g.workers}, 1 to ${room} of A-Z a-z 0-9 . _ - (each worker is the gateway <id>.<n>)`,
            params: { allowed: true },
          });
      }),
    api: z.strictObject({ port: port(D.DEFAULT_API_PORT) }).prefault({}),
    indexer: z.strictObject({ port: port(D.DEFAULT_INDEXER_PORT) }).prefault({}),
    control: z.strictObject({ port: port(D.DEFAULT_CONTROL_PORT) }).prefault({}),
    sync: z.strictObject({ leaseS: posInt(D.DEFAULT_SYNC_LEASE_S, 3600) }).prefault({}),
    limits: z
      .object({
        keyCount: posInt(D.DEFAULT_KEY_LIMIT_COUNT, 1_000_000_000),
        keyWindowS: posInt(D.DEFAULT_KEY_LIMIT_WINDOW_S, 86_400),
        keyBurst: posInt(D.DEFAULT_KEY_BURST, 1_000_000_000),
        ipCount: posInt(D.DEFAULT_IP_LIMIT_COUNT, 1_000_000_000),
        ipWindowS: posInt(D.DEFAULT_IP_LIMIT_WINDOW_S, 86_400),
        ipBurst: posInt(D.DEFAULT_IP_BURST, 1_000_000_000),
        publicCount: posInt(D.DEFAULT_PUBLIC_LIMIT_COUNT, 1_000_000_000),
        publicWindowS: posInt(D.DEFAULT_PUBLIC_LIMIT_WINDOW_S, 86_400),
        mode: z
          .enum(LIMITS_MODES)
          .default(D.DEFAULT_LIMITS_MODE)
          .describe("split (each key's limit divided among the live gateways) or per-gateway (each gateway enforces the whole limit)"),
      })
      .strict()
      .prefault({}),
    endpoints: z
      .object({
        timeoutMs: posInt(D.DEFAULT_UPSTREAM_TIMEOUT_MS, 3_600_000),
        slaMs: posInt(D.DEFAULT_SLA_MS, 3_600_000),
      })
      .strict()
      .prefault({}),
    keys: z.strictObject({ rotateGraceS: posInt(D.DEFAULT_ROTATE_GRACE_S, 30 * 86_400) }).prefault({}),
    cache: z
      .object({
        providersTtlS: posInt(D.DEFAULT_PROVIDERS_CACHE_TTL_S, 3600),
        statsTtlS: posInt(D.DEFAULT_STATS_CACHE_TTL_S, 3600),
        statusTtlS: posInt(D.DEFAULT_STATUS_CACHE_TTL_S, 3600),
      })
      .strict()
      .prefault({}),
    tiers: z
      .object({
        reliableBelow: fraction(D.DEFAULT_TIER_RELIABLE_BELOW),
        elevatedUpTo: fraction(D.DEFAULT_TIER_ELEVATED_UP_TO),
        minCalls: posInt(D.DEFAULT_TIER_MIN_CALLS, 1_000_000_000),
        windowH: posInt(D.DEFAULT_TIER_WINDOW_H, 24 * 90),
      })
      .strict()
      .prefault({})
      .refine((t) => t.reliableBelow <= t.elevatedUpTo, {
        message: 'tiers.reliableBelow must not exceed tiers.elevatedUpTo',
      }),
    public: z
      .object({
        userAgentAllow: z
          .string()
          .regex(/^(browser|[A-Za-z0-9][A-Za-z0-9._-]*)(,(browser|[A-Za-z0-9][A-Za-z0-9._-]*))*$/)
          .default(D.DEFAULT_PUBLIC_USER_AGENT_ALLOW)
          .describe('a comma-separated list of browser and product names (a product passes as <product>/<semver>)'),
        userAgentExemptPaths: z
          .string()
          .regex(/^(none|\/[^,\s]*(,\/[^,\s]*)*)$/)
          .default(D.DEFAULT_PUBLIC_USER_AGENT_EXEMPT_PATHS)
          .describe('none, or a comma-separated list of paths (each starting with /) served to any User-Agent'),
        trustedProxyHops: z.number().int().min(0).max(10).default(0).describe('an integer from 0 to 10'),
        recentActivity: posInt(D.DEFAULT_PUBLIC_RECENT_ACTIVITY, 100),
        activityPageSize: posInt(D.DEFAULT_PUBLIC_ACTIVITY_PAGE_SIZE, 1000),
        activityMaxPageSize: posInt(D.DEFAULT_PUBLIC_ACTIVITY_MAX_PAGE_SIZE, 1000),
        statusChangelogEntries: posInt(D.DEFAULT_PUBLIC_STATUS_CHANGELOG_ENTRIES, 50),
      })
      .strict()
      .prefault({})
      .refine((p) => p.activityPageSize <= p.activityMaxPageSize, {
        message: 'public.activityPageSize must not exceed public.activityMaxPageSize',
      }),
    settler: z
      .object({
        cadenceMs: posInt(D.DEFAULT_SETTLER_CADENCE_MS, 3_600_000),
        batchCap: posInt(D.DEFAULT_SETTLER_BATCH_CAP, 1_000_000),
        leaseS: posInt(D.DEFAULT_SETTLER_LEASE_S, 3600),
      })
      .strict()
      .prefault({}),
    money: z
      .object({
        approvals: z
          .number()
          .int()
          .min(1)
          .max(2)
          .default(D.DEFAULT_MONEY_APPROVALS)
          .describe('1 (one operator funds the pool, marks payouts paid, rotates the receipt key) or 2 (a second operator approves each)'),
      })
      .strict()
      .prefault({}),
    pool: z
      .object({
        lockRatio: z
          .number()
          .min(0)
          .max(100)
          .default(D.DEFAULT_POOL_LOCK_RATIO)
          .describe('locked capital = min(capital, exposure × lockRatio): what no withdrawal may take'),
        withdrawalNoticeH: z
          .number()
          .min(0)
          .max(24 * 365)
          .default(D.DEFAULT_POOL_WITHDRAWAL_NOTICE_H)
          .describe('hours a liquidity provider’s withdrawal waits before it may be paid'),
        minFree: z
          .number()
          .int()
          .min(0)
          .max(Number.MAX_SAFE_INTEGER)
          .optional()
          .describe(
            'micro-units: while the pool’s free capital is below this, calls are admitted uncovered (default: the largest single covered call)',
          ),
      })
      .strict()
      .prefault({}),
    applications: z
      .object({
        notifier: z
          .enum(['operator', 'webhook'])
          .default(D.DEFAULT_APPLICATIONS_NOTIFIER)
          .describe('operator (the key is shown once to the approving operator) or webhook'),
        webhookUrl: z
          .url({ protocol: /^https?$/ })
          .optional()
          .describe('an http(s) URL that receives approved keys (required when applications.notifier is webhook)'),
        webhookSecret: z
          .string()
          .min(16)
          .max(256)
          .regex(/^[\x21-\x7e]+$/)
          .optional()
          .describe(
            'the HMAC-SHA256 signing secret: 16 to 256 printable characters without spaces (required when applications.notifier is webhook)',
          ),
        webhookRetries: z.number().int().min(0).max(10).default(D.DEFAULT_WEBHOOK_RETRIES).describe('an integer from 0 to 10'),
        webhookBackoffMs: posInt(D.DEFAULT_WEBHOOK_BACKOFF_MS, 60_000),
        webhookTimeoutMs: posInt(D.DEFAULT_WEBHOOK_TIMEOUT_MS, 60_000),
        marketUrl: z
          .url({ protocol: /^https?$/ })
          .optional()
          .describe('the gateway URL ({market_url}) written into key delivery instructions'),
        duplicateWindowS: posInt(D.DEFAULT_APPLICATION_DUPLICATE_WINDOW_S, 30 * 86_400),
        submitLimitCount: posInt(D.DEFAULT_APPLICATION_SUBMIT_LIMIT_COUNT, 1_000_000),
        submitLimitWindowS: posInt(D.DEFAULT_APPLICATION_SUBMIT_LIMIT_WINDOW_S, 86_400),
        invalidLimitCount: posInt(D.DEFAULT_APPLICATION_INVALID_LIMIT_COUNT, 1_000_000),
      })
      .strict()
      .prefault({})
      .superRefine((a, ctx) => {
        if (a.notifier !== 'webhook') return;
        if (a.webhookUrl === undefined)
          ctx.addIssue({ code: 'custom', path: ['webhookUrl'], message: 'required when applications.notifier is webhook' });
        if (a.webhookSecret === undefined)
          ctx.addIssue({ code: 'custom', path: ['webhookSecret'], message: 'required when applications.notifier is webhook' });
      }),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;
