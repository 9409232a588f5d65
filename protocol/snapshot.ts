/**
 * Control → gateway sync (docs/design.md §4). The stream (`GET /_sync/v1/stream`) is newline-delimited
 * JSON: a full snapshot as a `snapshot_begin` line, `keys` chunk lines and a `snapshot_end`
 * line carrying the SHA-256 of the lines before it; or `delta` lines, each applying to exactly
 * one base version; `ping` lines, which the gateway answers with a lease renewal; and `beat`
 * lines, which it does not answer, so that it notices within a few beats a control that hangs.
 * The gateway applies an update atomically, then acks `{version, sha256}` or nacks it (and
 * keeps its old state).
 *
 * Keys travel as SHA-256 hashes only. Injected upstream headers travel here (gateways must
 * send them) and nowhere else.
 */
import { createHash, hash } from 'node:crypto';
import { z } from 'zod';
import { InstanceId } from './budgets';
import { FLAG_NAMES, type FlagName } from './admin';
import { HttpMethod } from './endpoint';
import { GATEWAY_ENGINES } from './engines';
import { LimitsMode, Share } from './gateways';

export { GATEWAY_ENGINES };

export const SYNC_STREAM_PATH = '/_sync/v1/stream';
export const SYNC_ACK_PATH = '/_sync/v1/ack';
export const SYNC_OUTCOMES_PATH = '/_sync/v1/outcomes';
/** Keys per `keys` line of a full snapshot. */
export const SNAPSHOT_KEYS_PER_LINE = 5_000;
/**
 * Control pings every stream this often (three times per `sync.leaseS` when that is shorter); a
 * gateway answers each ping with a lease renewal, one POST and one stored row.
 */
export const SYNC_PING_INTERVAL_MS = 10_000;
/**
 * Control writes a `beat` line to every stream this often, and announces it in the stream's
 * {@link SYNC_BEAT_HEADER} (milliseconds). Unlike a ping it is not answered, so it costs control
 * one small write per gateway and nothing else; a gateway that hears nothing for a few beats
 * takes its control for hung and moves to the next.
 */
export const SYNC_BEAT_INTERVAL_MS = 2_000;
/** The stream's answer header announcing control's beat interval (ms); absent from controls older than beats. */
export const SYNC_BEAT_HEADER = 'x-svc-beat-ms';

/** The characters of a gateway id, as a regular-expression class body. */
const GATEWAY_ID_CHARS = 'A-Za-z0-9._-';
/** A gateway id (`gateway.id`, `SVC_GATEWAY_ID`): 1 to 64 of `A-Z a-z 0-9 . _ -`. */
const GATEWAY_ID_PATTERN = new RegExp(`^[${GATEWAY_ID_CHARS}]{1,64}$`);
export const GATEWAY_ID_RULE = '1 to 64 of A-Z a-z 0-9 . _ -';
export const GatewayId = z.string().regex(GATEWAY_ID_PATTERN, { message: `must be ${GATEWAY_ID_RULE}` });
const NOT_GATEWAY_ID_CHAR = new RegExp(`[^${GATEWAY_ID_CHARS}]`, 'g');

/** The id of a gateway with none configured: `gw-` and the host name, other characters as `-`. */
export function defaultGatewayId(host: string): string {
  return `gw-${host.replace(NOT_GATEWAY_ID_CHAR, '-').slice(0, 60)}`;
}

/** Longest gateway id that leaves room for the suffix `.<n>` of each of `workers` workers. */
export function workerIdRoom(workers: number): number {
  return 64 - 1 - String(workers).length;
}

/**
 * The gateway id of worker `n` (1-based) of the gateway `id` run as `workers` workers: `<id>.<n>`,
 * the id cut to leave room for the suffix (a configured id is refused when too long, so only a
 * default one, from a long host name, is ever cut).
 */
export function workerGatewayId(id: string, n: number, workers: number): string {
  return `${id.slice(0, workerIdRoom(workers))}.${n}`;
}

/** The proxy engine a gateway forwards with (`gateway.engine`); `GATEWAY_ENGINES[0]` is the default. */
export const GatewayEngine = z.enum(GATEWAY_ENGINES);
export type GatewayEngine = z.infer<typeof GatewayEngine>;
/**
 * An engine name as a gateway announces it on the stream. Control takes names it does not know
 * (a newer gateway's engine) and only shows them.
 */
export const EngineName = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,31}$/);

/**
 * Query of `GET /_sync/v1/stream`: the gateway's id, the state version it holds (0: none), the
 * epoch of the database that version came from (deltas only apply within one epoch) and the
 * proxy engine it forwards with (absent from gateways older than engines).
 */
export const StreamQuery = z.object({
  gateway_id: GatewayId,
  version: z.coerce.number().int().min(0).default(0),
  epoch: z.coerce.number().int().min(0).optional(),
  engine: EngineName.optional(),
  /**
   * The gateway process's instance id (protocol/budgets.ts): it holds prepaid budgets, so it is
   * sent keys' accounts, prepaid endpoints' `billing` and `accounts_funded`. Absent from gateways
   * older than prepaid billing, which are sent none of them.
   */
  instance: InstanceId.optional(),
});
export type StreamQuery = z.infer<typeof StreamQuery>;

const Hash = z.string().regex(/^[0-9a-f]{64}$/);
const Ms = z.number().int().min(0);

export const LimitPolicy = z.object({
  count: z.number().int().min(1),
  window_seconds: z.number().int().min(1),
  burst: z.number().int().min(1),
});
export type LimitPolicy = z.infer<typeof LimitPolicy>;

export const SnapshotEndpoint = z
  .object({
    id: z.string().min(1).max(63),
    upstream: z.url(),
    methods: z.array(HttpMethod).min(1),
    timeout_ms: z.number().int().min(1),
    sla_ms: z.number().int().min(1),
    price: Ms,
    premium: Ms,
    headers: z.record(z.string(), z.string()),
    /** The endpoint's response schema (protocol/response-schema.ts); absent when it has none. */
    response_schema: z.record(z.string(), z.unknown()).optional(),
    /** `prepaid`: keyed calls are admitted only while the key's account covers the premium. Absent: postpaid. */
    billing: z.literal('prepaid').optional(),
  })
  .strict();
export type SnapshotEndpoint = z.infer<typeof SnapshotEndpoint>;

/**
 * One key with every secret that admits it. `expires_at` (ms) bounds the key; each secret may
 * expire earlier (a rotation's grace). `endpoints` empty = all endpoints.
 */
export const SnapshotKey = z
  .object({
    id: z.string().min(1).max(64),
    secrets: z.array(z.object({ hash: Hash, expires_at: Ms.nullable() }).strict()).min(1),
    expires_at: Ms.nullable(),
    endpoints: z.array(z.string()),
    limit: z.object({ count: z.number().int().min(1), window_seconds: z.number().int().min(1) }).nullable(),
    lift: z.object({ count: z.number().int().min(1), window_seconds: z.number().int().min(1), until: Ms }).nullable(),
    /**
     * The key's account (`acc_…`), whose balance prepaid endpoints spend. Sent only to gateways
     * that hold budgets (their stream query names an `instance`).
     */
    account: z.string().min(1).max(64).optional(),
  })
  .strict();
export type SnapshotKey = z.infer<typeof SnapshotKey>;

/** Every runtime flag by name ({@link FLAG_NAMES} is the one list; adding a flag there adds it here). */
export const Flags = z.strictObject(Object.fromEntries(FLAG_NAMES.map((name) => [name, z.boolean()])) as Record<FlagName, z.ZodBoolean>);
export type Flags = z.infer<typeof Flags>;

/**
 * Every flag's value from stored `(name, value)` rows (value 1 or true: on): a flag without a
 * row is off and a row naming no known flag is ignored. Full snapshots and deltas both build
 * their `flags` with this.
 */
export function flagsOf(rows: Iterable<{ name: string; value: number | boolean }>): Flags {
  const flags = Object.fromEntries(FLAG_NAMES.map((name) => [name, false])) as Flags;
  for (const row of rows) if (Object.hasOwn(flags, row.name)) flags[row.name as FlagName] = row.value === 1 || row.value === true;
  return flags;
}

export const Limits = z.object({ key: LimitPolicy, ip: LimitPolicy }).strict();
export type Limits = z.infer<typeof Limits>;

export const SnapshotBegin = z
  .object({
    type: z.literal('snapshot_begin'),
    version: z.number().int().min(1),
    /** Identifies the control database; deltas only apply within one epoch. */
    epoch: z.number().int().min(0),
    generated_at: z.string(),
    flags: Flags,
    limits: Limits,
    endpoints: z.array(SnapshotEndpoint),
    key_count: z.number().int().min(0),
  })
  .strict();
export const SnapshotKeys = z.object({ type: z.literal('keys'), keys: z.array(SnapshotKey) }).strict();
export const SnapshotEnd = z.object({ type: z.literal('snapshot_end'), version: z.number().int().min(1), sha256: Hash }).strict();

export const Delta = z
  .object({
    type: z.literal('delta'),
    version: z.number().int().min(2),
    base: z.number().int().min(1),
    flags: Flags.optional(),
    limits: Limits.optional(),
    endpoints_upsert: z.array(SnapshotEndpoint).optional(),
    endpoints_remove: z.array(z.string()).optional(),
    keys_upsert: z.array(SnapshotKey).optional(),
    keys_remove: z.array(z.string()).optional(),
    /**
     * Accounts whose money grew (a deposit or a refill): a gateway that found one of them short
     * asks again for budget at its next call. Sent only to gateways that hold budgets.
     */
    accounts_funded: z.array(z.string()).optional(),
    sha256: Hash,
  })
  .strict();
export type Delta = z.infer<typeof Delta>;

export const Ping = z.object({ type: z.literal('ping'), version: z.number().int().min(0) }).strict();

/** Control is running: written every {@link SYNC_BEAT_INTERVAL_MS}, never answered (gateways older than beats ignore it). */
export const Beat = z.strictObject({ type: z.literal('beat') });
/** A beat, as written to the stream. */
export const BEAT_LINE = '{"type":"beat"}\n';

/**
 * This gateway's share of every key's limit (`limits.mode`), written to its stream alone: when
 * it connects (provisional, as if it were live) and whenever control re-divides. The gateway
 * multiplies each key's limit and burst by `share`; keyless per-address limits stay whole. Not
 * part of the versioned state (not digested or acked), and it may fall between the lines of a
 * snapshot; the gateway keeps the last one it got while control is away.
 */
export const ShareLine = z.strictObject({
  type: z.literal('share'),
  share: Share,
  /** Gateways the limits were divided among, this one included. */
  gateways: z.number().int().min(1),
  mode: LimitsMode,
});
export type ShareLine = z.infer<typeof ShareLine>;

/**
 * Whether this gateway covers the calls it admits (docs/money.md, "Pause"), written to its stream
 * alone: when it connects, whenever control's evaluation (every second) changes it, and at least
 * every 10 s (the same line again, from a newer evaluation). Paused (`covered: false`: by an
 * operator, or the pool's free capital below `pool.minFree`), the gateway admits calls
 * uncovered. Covered, it admits a keyed call covered only while its `allowance` (micro-units:
 * its weight's part of the pool's free capital) still holds the call's price + premium beside
 * its calls under way and the covered failures it still counts (until control has provably seen
 * them: {@link IngestedLine}); otherwise uncovered. Not part of the versioned state (not
 * digested or acked); it may fall between the lines of a snapshot. Gateways older than coverage
 * ignore it, and a gateway that never got one (a control older than coverage) covers every call.
 * Its members are fixed: it is strict, so a gateway refuses a line with one more.
 */
export const CoverageLine = z.strictObject({
  type: z.literal('coverage'),
  covered: z.boolean(),
  allowance: z.number().int().min(0),
});
export type CoverageLine = z.infer<typeof CoverageLine>;

/**
 * Written right before a `coverage` line (in the same write, so nothing falls between them) by
 * controls that number their ingests: the evaluation that line comes from started when this
 * control process (`instance`) had committed its outcome batches numbered up to `seq` (0: none
 * yet), so its allowance reflects every covered failure of those batches (protocol/outcome.ts
 * `OutcomeAck`, `ingest_seq`). The gateway stops counting a failure against its allowance once a
 * line reflects it; a `coverage` line with no `ingested` line before it (an older control) comes
 * with no such proof (docs/money.md, "Pause").
 *
 * A line of its own rather than a member of the `coverage` line, which is strict: gateways older
 * than it ignore a line type they do not know, but would refuse a `coverage` line with a member
 * more, and then stop applying coverage. Not strict, so that later members are ignored, not
 * refused, by this gateway.
 */
export const IngestedLine = z.object({
  type: z.literal('ingested'),
  instance: InstanceId,
  seq: z.number().int().min(0),
});
export type IngestedLine = z.infer<typeof IngestedLine>;

export const StreamLine = z.discriminatedUnion('type', [
  SnapshotBegin,
  SnapshotKeys,
  SnapshotEnd,
  Delta,
  Ping,
  Beat,
  ShareLine,
  CoverageLine,
  IngestedLine,
]);
export type StreamLine = z.infer<typeof StreamLine>;

/** Body of `POST /_sync/v1/ack`. */
export const SyncAck = z
  .object({
    gateway_id: z.string().min(1).max(64),
    version: z.number().int().min(0),
    sha256: Hash.optional(),
    ok: z.boolean(),
    reason: z.string().max(1000).optional(),
    /**
     * A lease renewal, the gateway's answer to each ping: it is alive and holds `version`
     * (nothing is applied or refused). Keeps it live for `sync.leaseS` (its limit share).
     */
    renew: z.literal(true).optional(),
  })
  .strict();
export type SyncAck = z.infer<typeof SyncAck>;

/** Control's answer to an ack or nack it took. */
export const SyncAckAnswer = z.strictObject({ ok: z.literal(true) });
export type SyncAckAnswer = z.infer<typeof SyncAckAnswer>;

/** What a sealed line ends with: `,"sha256":"<64 hex digits>"}`. */
const SEAL_PREFIX = ',"sha256":"';
const SEAL_LENGTH = SEAL_PREFIX.length + 64 + '"}'.length;

/**
 * Serialise a delta as one stream line whose last member is `sha256`: the SHA-256 of the line
 * with that member removed. Works on the raw text, so neither side depends on key order.
 */
export function sealDelta(body: Omit<Delta, 'sha256'>): { line: string; sha256: string } {
  const text = JSON.stringify(body);
  const sha256 = hash('sha256', text, 'hex');
  return { line: `${text.slice(0, -1)},"sha256":"${sha256}"}`, sha256 };
}

/** Check a received delta line against its seal; returns the digest or null when it does not match. */
export function verifySealedLine(line: string): string | null {
  const at = line.length - SEAL_LENGTH;
  if (at < 0 || !line.startsWith(SEAL_PREFIX, at) || !line.endsWith('"}')) return null;
  const seal = line.slice(at + SEAL_PREFIX.length, -2);
  // A SHA-256 in hex equals `seal` only when `seal` is 64 lowercase hex digits itself.
  return hash('sha256', line.slice(0, at) + '}', 'hex') === seal ? seal : null;
}

/** Incremental digest of a full snapshot's lines (`snapshot_begin` and `keys`, as sent). */
export class SnapshotDigest {
  private readonly hash = createHash('sha256');
  update(line: string): void {
    this.hash.update(line).update('\n');
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}
