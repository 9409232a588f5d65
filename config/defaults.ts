/**
 * Named defaults, with their units in the name. The schema in `schema.ts` is the only
 * place that reads them.
 */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_DATA_DIR = './data';

export const DEFAULT_GATEWAY_PORT = 7070;
export const DEFAULT_API_PORT = 7071;
export const DEFAULT_INDEXER_PORT = 7072;
export const DEFAULT_CONTROL_PORT = 7073;

/** Per-key token bucket: requests per window, and the bucket size. */
export const DEFAULT_KEY_LIMIT_COUNT = 60;
export const DEFAULT_KEY_LIMIT_WINDOW_S = 60;
export const DEFAULT_KEY_BURST = 10;
/**
 * How a key's limit holds across gateways (`limits.mode`): `split` divides it among the live
 * gateways (control pushes each its share); `per-gateway` gives every gateway the whole limit.
 */
export const DEFAULT_LIMITS_MODE = 'split';
/** Keyless calls (gate off) are limited per client IP. */
export const DEFAULT_IP_LIMIT_COUNT = 60;
export const DEFAULT_IP_LIMIT_WINDOW_S = 60;
export const DEFAULT_IP_BURST = 10;
/** Public reads and the indexer: generous, per client IP. */
export const DEFAULT_PUBLIC_LIMIT_COUNT = 600;
export const DEFAULT_PUBLIC_LIMIT_WINDOW_S = 60;

export const DEFAULT_UPSTREAM_TIMEOUT_MS = 30_000;
export const DEFAULT_SLA_MS = 5_000;
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Longest pause between two chunks of a caller's request body before 408 `svc_request_timeout`. */
export const DEFAULT_CLIENT_BODY_TIMEOUT_MS = 10_000;
/** Most request header fields a gateway call may carry before 431 `svc_headers_too_large`. */
export const DEFAULT_GATEWAY_MAX_HEADERS = 100;
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 5_000;
/** Upstream connections per origin a gateway opens (the proxy engines' default too). */
export const DEFAULT_UPSTREAM_MAX_SOCKETS = 256;
/** The gateway's proxy engine (`gateway.engine`): http-proxy, as the design card names it. */
export const DEFAULT_GATEWAY_ENGINE = 'http-proxy';
export const DEFAULT_MAINTENANCE_RETRY_AFTER_S = 60;
/** Gateway processes serving one port (`gateway.workers`): 1 is one process, no supervisor. */
export const DEFAULT_GATEWAY_WORKERS = 1;
/** Most gateway workers one supervisor runs (`auto` on a larger machine takes this many). */
export const MAX_GATEWAY_WORKERS = 1024;

export const DEFAULT_PROVIDERS_CACHE_TTL_S = 10;
export const DEFAULT_STATS_CACHE_TTL_S = 5;
export const DEFAULT_STATUS_CACHE_TTL_S = 5;

/** Public read API: who may call it (`browser` and product names sent as `<product>/<semver>`). */
export const DEFAULT_PUBLIC_USER_AGENT_ALLOW = 'browser,svc-monitor-sdk';
/** Paths served without the User-Agent check (liveness probes use all sorts of clients). */
export const DEFAULT_PUBLIC_USER_AGENT_EXEMPT_PATHS = '/health';
/** Calls listed in the indexer's `recent_activity`. */
export const DEFAULT_PUBLIC_RECENT_ACTIVITY = 20;
/** `/api/activity` page size when `limit` is not given, and the largest `limit` accepted. */
export const DEFAULT_PUBLIC_ACTIVITY_PAGE_SIZE = 50;
export const DEFAULT_PUBLIC_ACTIVITY_MAX_PAGE_SIZE = 200;
/** Changelog entries shown on the status page. */
export const DEFAULT_PUBLIC_STATUS_CHANGELOG_ENTRIES = 5;

export const DEFAULT_TIER_RELIABLE_BELOW = 0.01;
export const DEFAULT_TIER_ELEVATED_UP_TO = 0.05;
export const DEFAULT_TIER_MIN_CALLS = 20;
export const DEFAULT_TIER_WINDOW_H = 24;

/**
 * A gateway counts as live for limit shares while it is connected and has acked (an update, or
 * the lease renewal it answers each ping with) within this many seconds.
 */
export const DEFAULT_SYNC_LEASE_S = 30;

export const DEFAULT_SETTLER_CADENCE_MS = 5_000;
export const DEFAULT_SETTLER_BATCH_CAP = 1_000;
/**
 * Among several controls on one PostgreSQL database, the settler runs in the one holding its
 * lease, renewed every cadence (at most every third of this); when that control dies, another
 * takes the lease over once this many seconds have passed since the last renewal.
 */
export const DEFAULT_SETTLER_LEASE_S = 10;

/** Operators who must agree on a money action: 1 (the one asking acts), or 2 (a second one approves). */
export const DEFAULT_MONEY_APPROVALS = 1;

/**
 * The pool's capital (docs/money.md, "Pool capital"): locked capital is the pool's exposure
 * times this ratio (at most the capital), and no withdrawal takes it.
 */
export const DEFAULT_POOL_LOCK_RATIO = 1.0;
/** Hours a liquidity provider's withdrawal waits before it may be paid. */
export const DEFAULT_POOL_WITHDRAWAL_NOTICE_H = 72;

export const DEFAULT_ROTATE_GRACE_S = 24 * 3600;
export const DEFAULT_LOG_LEVEL = 'info';

/** Access applications: key delivery over a webhook, duplicate recognition, submit limit. */
export const DEFAULT_APPLICATIONS_NOTIFIER = 'operator';
export const DEFAULT_WEBHOOK_RETRIES = 3;
export const DEFAULT_WEBHOOK_BACKOFF_MS = 500;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
export const DEFAULT_APPLICATION_DUPLICATE_WINDOW_S = 24 * 3600;
export const DEFAULT_APPLICATION_SUBMIT_LIMIT_COUNT = 10;
export const DEFAULT_APPLICATION_SUBMIT_LIMIT_WINDOW_S = 3600;
/** Submissions refused as invalid per address per submit window: a looser count kept apart from the submit limit. */
export const DEFAULT_APPLICATION_INVALID_LIMIT_COUNT = 30;
