/**
 * Admin API request and response shapes (`/_admin/v1/…`), shared by control (validates
 * requests) and `svcctl` (sends them, reads answers). Field names are snake_case on the wire
 * and stable: `--json` output is built from these views.
 */
import { z } from 'zod';
import { DisplayName, EndpointId, HttpMethod, InjectedHeaders, UpstreamUrl } from './endpoint';
import { GatewayStatus } from './gateways';
import { PublicChangelogEntry, SettlerPublicState } from './public';
import { ResponseSchema } from './response-schema';
import { SettlerStatus } from './settlement';
import { FLAG_NAMES, FLAG_PREFIX } from './flag-names';
import { plainString } from './text';
import { WalletAddress } from './wallet';
import { AccountRef } from './accounts';
import { Count, IsoTime, MicroAmount, PageCursor, StateVersion, pageLimit } from './wire';

// ---------------------------------------------------------------------------------------
// Endpoints

const MicroUnits = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const PositiveMs = z.number().int().min(1).max(3_600_000);

/** Fields an operator may set on an endpoint (all but `id` optional on update). */
/** A key's lifetime from its issue: whole seconds, at most ten years. */
export const ExpiresInSeconds = z
  .number()
  .int()
  .min(1)
  .max(10 * 365 * 86400);

/** How long the secrets a rotation replaces keep working, seconds (keys and operator tokens alike). */
export const GraceSeconds = z
  .number()
  .int()
  .min(0)
  .max(30 * 86400);

/**
 * How an endpoint's calls are paid. `postpaid`: the premium is taken from the key's account when
 * the call settles, whatever the account holds. `prepaid`: a gateway admits a keyed call only
 * while the account can cover the premium (402 `svc_payment_required` otherwise).
 */
export const BILLING_MODES = ['prepaid', 'postpaid'] as const;
export const Billing = z.enum(BILLING_MODES);
export type Billing = z.infer<typeof Billing>;

export const EndpointFields = z.object({
  upstream: UpstreamUrl,
  /** Shown on the public pages beside the provider's opaque id; null removes it. */
  display_name: DisplayName.nullable().optional(),
  methods: z.array(HttpMethod).min(1).optional(),
  timeout_ms: PositiveMs.optional(),
  price: MicroUnits.optional(),
  premium: MicroUnits.optional(),
  sla_ms: PositiveMs.optional(),
  refund_cap_per_hour: MicroUnits.optional(),
  /** The most one call's refund pays, micro-units; 0 = no cap. */
  refund_cap_per_call: MicroUnits.optional(),
  /** The most one settlement batch's refunds pay in all, micro-units; 0 = no cap. */
  refund_cap_per_batch: MicroUnits.optional(),
  treasury_fee_bps: z.number().int().min(0).max(10_000).optional(),
  billing: Billing.optional(),
  headers: InjectedHeaders.optional(),
  /** JSON Schema draft 2020-12 for 2xx JSON bodies (protocol/response-schema.ts); null removes it. */
  response_schema: ResponseSchema.nullable().optional(),
});

export const CreateEndpointRequest = EndpointFields.extend({ id: EndpointId }).strict();
export type CreateEndpointRequest = z.infer<typeof CreateEndpointRequest>;

export const UpdateEndpointRequest = EndpointFields.partial().strict();
export type UpdateEndpointRequest = z.infer<typeof UpdateEndpointRequest>;

/** Every mutation answers with the state version it produced (docs/design.md §4). */
const Versioned = z.strictObject({ version: StateVersion });

/** An endpoint as the admin API shows it: injected header values never appear. */
export const EndpointView = z.strictObject({
  id: z.string(),
  /** The public display name, or null (the pages show the opaque id alone). */
  display_name: z.string().nullable(),
  upstream: z.string(),
  methods: z.array(HttpMethod),
  timeout_ms: z.number().int().min(1),
  price: MicroAmount,
  premium: MicroAmount,
  sla_ms: z.number().int().min(1),
  refund_cap_per_hour: MicroAmount,
  /** The most one call's refund pays; 0 = no cap. */
  refund_cap_per_call: MicroAmount,
  /** The most one settlement batch's refunds pay in all; 0 = no cap. */
  refund_cap_per_batch: MicroAmount,
  treasury_fee_bps: z.number().int().min(0).max(10_000),
  billing: Billing,
  /** Names of the headers injected upstream; their values are never shown. */
  injected_headers: z.array(z.string()),
  /** The response schema 2xx JSON bodies must match (protocol/response-schema.ts), or null (no check). */
  response_schema: z.record(z.string(), z.unknown()).nullable(),
  created_at: IsoTime,
  updated_at: IsoTime,
});
export type EndpointView = z.infer<typeof EndpointView>;

/** Answer to add and update: the endpoint and the state version the change produced. */
export const EndpointChange = EndpointView.extend(Versioned.shape);
export type EndpointChange = z.infer<typeof EndpointChange>;

/** `GET /_admin/v1/endpoints`. */
export const EndpointList = z.strictObject({ endpoints: z.array(EndpointView) });
export type EndpointList = z.infer<typeof EndpointList>;

/** `DELETE /_admin/v1/endpoints/{id}`: removal is soft (past outcomes keep pointing at it). */
export const EndpointRemoved = z.strictObject({ id: z.string(), removed: z.literal(true), version: StateVersion });
export type EndpointRemoved = z.infer<typeof EndpointRemoved>;

// ---------------------------------------------------------------------------------------
// Keys

export const RateLimitBody = z.object({
  count: z.number().int().min(1).max(1_000_000_000),
  window_seconds: z.number().int().min(1).max(86_400),
});

export const IssueKeyRequest = z
  .object({
    name: plainString().trim().min(1).max(120).optional(),
    wallet: WalletAddress.optional(),
    endpoints: z.array(EndpointId).max(1000).optional(),
    expires_in_seconds: ExpiresInSeconds.optional(),
    limit: RateLimitBody.optional(),
    application_id: plainString().min(1).max(64).optional(),
    /** The account the key belongs to (its id or name); without one the key gets an account of its own. */
    account: AccountRef.optional(),
  })
  .strict();
export type IssueKeyRequest = z.infer<typeof IssueKeyRequest>;

export const RotateKeyRequest = z
  .object({
    grace_seconds: GraceSeconds.optional(),
  })
  .strict();

export const LiftKeyRequest = z
  .object({
    limit: RateLimitBody,
    for_seconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86400),
  })
  .strict();

export const WalletRequest = z.object({ wallet: WalletAddress }).strict();

export const KEY_STATUSES = ['active', 'expired', 'revoked'] as const;
export const KeyStatus = z.enum(KEY_STATUSES);
export type KeyStatus = z.infer<typeof KeyStatus>;

/** Keys per page of `GET /_admin/v1/keys` when `limit` is not given. @default 100 */
export const KEY_LIST_DEFAULT_LIMIT = 100;
/** Most keys one page may hold. @default 1000 */
export const KEY_LIST_MAX_LIMIT = 1000;

/**
 * Query of `GET /_admin/v1/keys`: `status` filters on the server, `limit` (1–1000, default
 * 100) sizes the page, `cursor` is the previous answer's `next_cursor`. Unknown parameters
 * are refused, so a misspelt filter never silently lists everything.
 */
export const KeyListQuery = z.strictObject({
  status: z
    .enum(KEY_STATUSES, { message: `must be one of ${KEY_STATUSES.join(', ')}` })
    .optional()
    .describe('only keys in this state'),
  limit: pageLimit('keys', KEY_LIST_MAX_LIMIT, KEY_LIST_DEFAULT_LIMIT),
  cursor: PageCursor,
});
export type KeyListQuery = z.infer<typeof KeyListQuery>;

/** A key as the admin API shows it: never its plaintext or its hash. */
export const KeyView = z.strictObject({
  id: z.string(),
  name: z.string().nullable(),
  /** Display stub (`svc_beta_AbCd…`); never the key. */
  prefix: z.string(),
  status: KeyStatus,
  created_at: IsoTime,
  expires_at: IsoTime.nullable(),
  revoked_at: IsoTime.nullable(),
  wallet: z.string().nullable(),
  /** Endpoints the key may call; empty means all. */
  endpoints: z.array(z.string()),
  limit: z.strictObject({ count: z.number().int().min(1), window_seconds: z.number().int().min(1) }).nullable(),
  lift: z.strictObject({ count: z.number().int().min(1), window_seconds: z.number().int().min(1), until: IsoTime }).nullable(),
  application_id: z.string().nullable(),
  /** The account the key belongs to (`acc_…`). */
  account_id: z.string(),
  /** Secrets currently accepted for this key: more than one during a rotation's grace. */
  secrets: z.array(z.strictObject({ prefix: z.string(), created_at: IsoTime, expires_at: IsoTime.nullable() })),
});
export type KeyView = z.infer<typeof KeyView>;

/**
 * Answer of `GET /_admin/v1/keys`: one page, newest first. `next_cursor` is opaque; pass it as
 * `cursor` for the next page, and stop when it is null. A page with a `status` filter may hold
 * fewer keys than `limit` (even none) while `next_cursor` is not null: each page examines a
 * bounded number of keys so a sparse filter never stalls control.
 */
export const KeyList = z.strictObject({
  keys: z.array(KeyView),
  next_cursor: z.string().nullable(),
});
export type KeyList = z.infer<typeof KeyList>;

/** Answer to issue and rotate: the only place the plaintext `key` ever appears. */
export const IssuedKey = KeyView.extend({ key: z.string().describe('the plaintext key, shown this once'), version: StateVersion });
export type IssuedKey = z.infer<typeof IssuedKey>;

/** Answer to lift and wallet attach/detach: the key and the state version the change produced. */
export const KeyChange = KeyView.extend(Versioned.shape);
export type KeyChange = z.infer<typeof KeyChange>;

/** Answer to revoke; `changed` is false when the key was already revoked. */
export const KeyRevoked = KeyChange.extend({ changed: z.boolean() });
export type KeyRevoked = z.infer<typeof KeyRevoked>;

// ---------------------------------------------------------------------------------------
// Flags

export { FLAG_NAMES } from './flag-names';
export const FlagName = z.enum(FLAG_NAMES);
export type FlagName = z.infer<typeof FlagName>;

/** Accepts `beta_gate_enabled` and the spec's `system_flags.beta_gate_enabled`. */
export function normaliseFlagName(name: string): FlagName | null {
  const bare = name.startsWith(FLAG_PREFIX) ? name.slice(FLAG_PREFIX.length) : name;
  return (FLAG_NAMES as readonly string[]).includes(bare) ? (bare as FlagName) : null;
}

export const SetFlagRequest = z.object({ value: z.boolean(), note: plainString('text').trim().min(1).max(2000).optional() }).strict();

export const FlagView = z.strictObject({
  name: FlagName,
  value: z.boolean(),
  updated_at: IsoTime,
  updated_by: z.string(),
  note: z.string().nullable(),
});
export type FlagView = z.infer<typeof FlagView>;

/** `GET /_admin/v1/flags`. */
export const FlagList = z.strictObject({ flags: z.array(FlagView), version: StateVersion });
export type FlagList = z.infer<typeof FlagList>;

/**
 * Answer to `PUT /_admin/v1/flags/{name}`: `changed` is false (and nothing is written) when the
 * flag already had the value; `changelog_id` is the changelog entry the change wrote.
 */
export const FlagChange = FlagView.extend({
  version: StateVersion,
  changed: z.boolean(),
  changelog_id: z.number().int().min(1).nullable(),
});
export type FlagChange = z.infer<typeof FlagChange>;

// ---------------------------------------------------------------------------------------
// Changelog and audit

export const AddChangelogRequest = z.object({ text: plainString('text').trim().min(1).max(4000) }).strict();

/** A changelog entry as operators see it: the public fields, the flag change, and who wrote it. */
export const ChangelogEntry = PublicChangelogEntry.extend({
  flag: FlagName.nullable(),
  value: z.boolean().nullable(),
  author: z.string(),
});
export type ChangelogEntry = z.infer<typeof ChangelogEntry>;

/** Entries per changelog or audit answer when `limit` is absent, and the most one answer holds. */
export const ADMIN_CHANGELOG_DEFAULT_LIMIT = 50;
export const ADMIN_CHANGELOG_MAX_LIMIT = 1000;
export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 10_000;

/** Query of `GET /_admin/v1/changelog`. */
export const ChangelogQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(ADMIN_CHANGELOG_MAX_LIMIT)
    .optional()
    .describe(`entries to return (default ${ADMIN_CHANGELOG_DEFAULT_LIMIT})`),
});

/**
 * Query of `GET /_admin/v1/audit`: `operator` (the actor's name), `action` (exact, or a family:
 * `keys` matches `keys` and every `keys.…`) and `since` (an ISO time: rows at or after it)
 * filter on the server; `limit` sizes the page, `cursor` is the previous answer's
 * `next_cursor`.
 */
export const AuditQuery = z.strictObject({
  operator: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe('only rows this operator (the actor) wrote: `root`, an operator’s name, `control`'),
  action: z
    .string()
    .regex(/^[a-z0-9_.-]{1,64}$/, { message: 'must be an action such as keys.revoke, or a family such as keys' })
    .optional()
    .describe('only this action (`keys.revoke`), or this family of actions (`keys`: `keys.issue`, `keys.revoke`, …)'),
  since: z.iso
    .datetime({ offset: true, message: 'must be an ISO 8601 time such as 2030-01-01T00:00:00Z' })
    .optional()
    .describe('only rows at or after this ISO 8601 time'),
  limit: pageLimit('entries', AUDIT_MAX_LIMIT, AUDIT_DEFAULT_LIMIT),
  cursor: PageCursor,
});
export type AuditQuery = z.infer<typeof AuditQuery>;

/** `GET /_admin/v1/changelog`: newest first. */
export const ChangelogList = z.strictObject({ entries: z.array(ChangelogEntry) });
export type ChangelogList = z.infer<typeof ChangelogList>;

export const AuditEntry = z.strictObject({
  id: z.number().int().min(1),
  at: IsoTime,
  /** The operator who made the change (`root` for the bootstrap admin token), or `control` for its own. */
  actor: z.string(),
  /** The id of the token the operator used (`opt_…`; `root` or `root-env` for root's), never the token; null for control's own changes. */
  token_id: z.string().nullable(),
  /** The second operator who approved a two-person action; null for the rest. */
  approved_by: z.string().nullable(),
  action: z.string(),
  target: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** `GET /_admin/v1/audit`: newest first; `next_cursor` null on the last page. */
export const AuditList = z.strictObject({ entries: z.array(AuditEntry), next_cursor: z.string().nullable() });
export type AuditList = z.infer<typeof AuditList>;

// ---------------------------------------------------------------------------------------
// Status

const SchemaVersion = Count.describe('the schema version the database is at (migrations applied)');
const SchemaExpected = Count.describe('the schema version this build migrates to (its number of migrations for this kind of store)');

/** The SQLite store (the default): the file and the pragmas control set on it. */
export const SqliteStoreStatus = z.strictObject({
  kind: z.literal('sqlite'),
  path: z.string().describe('the database file'),
  journal_mode: z.string(),
  synchronous: z.string(),
  schema_version: SchemaVersion,
  schema_expected: SchemaExpected,
});

/** The PostgreSQL store (`databaseUrl`): where it is, with the URL's password masked. */
export const PostgresStoreStatus = z
  .strictObject({
    kind: z.literal('postgres'),
    url: z.string().describe('the database URL with its password masked: `postgres://u:***@h:5432/db`'),
    schema_version: SchemaVersion,
    schema_expected: SchemaExpected,
  })
  .describe('A PostgreSQL store (`databaseUrl` set): its URL with the password masked.');

/** Which store control runs on (`kind`) and its schema version. */
export const StoreStatus = z
  .discriminatedUnion('kind', [SqliteStoreStatus, PostgresStoreStatus])
  .describe('which store control runs on (`kind`), where it is, and its schema version against the one this build expects');
export type StoreStatus = z.infer<typeof StoreStatus>;

/** One control on the database: on SQLite the one control; on PostgreSQL every control that registered. */
export const ControlView = z.strictObject({
  /** Its control id (`ctl_…`). */
  id: z.string(),
  /** The admin URL it serves. */
  url: z.string(),
  /** Whether its settler settles (it holds the settler's lease). */
  leader: z.boolean(),
  /** When it last said it was alive (every few seconds while it runs). */
  last_seen: IsoTime,
});
export type ControlView = z.infer<typeof ControlView>;

/** `GET /_admin/v1/status`: what `svcctl status` shows. */
export const StatusView = z.strictObject({
  status: z.literal('ok'),
  /** This control's id, made on its first start and kept in its data dir (`control-id`). */
  control_id: z.string().describe("this control's id (`ctl_…`), made on its first start and kept in its data dir's `control-id`"),
  version: StateVersion,
  started_at: IsoTime,
  data_dir: z.string(),
  store: StoreStatus,
  urls: z.strictObject({ control: z.string(), api: z.string(), indexer: z.string() }),
  counts: z.strictObject({ keys_active: Count, keys_total: Count, endpoints: Count }),
  flags: z.record(FlagName, z.boolean()),
  gateways: z.array(GatewayStatus),
  /** The controls sharing the database, oldest start first (on SQLite: this one). */
  controls: z.array(ControlView),
  /** What a fresh install still lacks (docs/design.md §10): a funded pool, endpoints, connected gateways. */
  bootstrap: z.strictObject({
    database_ready: z.boolean(),
    pool_funded: z.boolean(),
    /** Pool balance, micro-units. */
    pool_balance: MicroAmount,
    endpoints: Count,
    gateways_connected: Count,
    gateways_known: Count,
  }),
  /** The settler; `not_running` (with the backlog from the store) when no settler runs in control. */
  settler: SettlerStatus.extend({
    state: SettlerPublicState,
    cadence_ms: SettlerStatus.shape.cadence_ms.nullable(),
    batch_cap: SettlerStatus.shape.batch_cap.nullable(),
  }),
});
export type StatusView = z.infer<typeof StatusView>;
