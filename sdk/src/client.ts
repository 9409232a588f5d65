/**
 * `SvcClient`: calls through the svc gateway, and the public reads of the public API and the
 * indexer.
 *
 * ```ts
 * const svc = new SvcClient({ gatewayUrl: 'http://127.0.0.1:7070', key: process.env.SVC_KEY });
 * const res = await svc.call('weather', 'forecast?city=Oslo', { body: { days: 3 } });
 * res.outcome; // 'ok' | 'latency_breach' | … : what the gateway decided for this call
 * ```
 *
 * The key is sent only to the gateway, as `Authorization: Bearer`, and never appears in an
 * error message. Every request carries `User-Agent: svc-monitor-sdk/<version>`.
 */
import { accountPath, pagesBefore, type AccountCallsOptions, type AccountOptions } from './account';
import { withRetries, type AttemptResult } from './attempts';
import { HistoryRewrittenError, type CheckpointStore } from './checkpoints';
import { systemClock, type Clock } from './clock';
import { SvcError, configError, parseProblem, sdkError, type Problem } from './errors';
import { EtagMemory } from './etag-memory';
import { verifyConsistency } from './generated/receipts-consistency';
import { ReceiptKeyring, verifyCallProof, type RefundVerdict } from './generated/receipts-verify';
import type {
  AccountAnswer,
  AccountCallsPage,
  ActivityPage,
  CallProof,
  Checkpoint,
  ConsistencyAnswer,
  ProvidersAnswer,
  PublicChangelogAnswer,
  ReceiptJwks,
  StatsAnswer,
  StatusAnswer,
} from './generated/wire';
import { isCallId, svcFields, type SvcFields } from './headers';
import { baseUrl, decodeBody, encodeBody, gatewayTarget, headerRecord, type FetchLike, type HeadersLike } from './http';
import {
  checkMaxBytes,
  checkTimeout,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_READ_TIMEOUT_MS,
  readBody,
} from './limits';
import { retryPolicy, serverWaitMs, type Failure, type RetryOptions, type RetryPolicy } from './retry';
import { USER_AGENT } from './version';

export interface SvcClientOptions {
  /** The gateway ({market_url}), e.g. `http://127.0.0.1:7070`. Needed by `call()`. */
  gatewayUrl?: string | undefined;
  /** The public read API ({api_url}), e.g. `http://127.0.0.1:7071`. Needed by `providers()`, `status()`, `changelog()`. */
  apiUrl?: string | undefined;
  /** The indexer ({indexer_url}), e.g. `http://127.0.0.1:7072`. Needed by `stats()`, `activity()`, `verifyRefund()`. */
  indexerUrl?: string | undefined;
  /**
   * A beta key (`svc_beta_…`), sent to the gateway, and to the public API for the key's own
   * account (`account()`, `calls()`) only. Optional while the beta gate is off.
   */
  key?: string | undefined;
  /** The `fetch` to use. @default globalThis.fetch */
  fetch?: FetchLike | undefined;
  /** When and how often to retry; see {@link RetryOptions}. */
  retry?: RetryOptions | undefined;
  /** Time source for retry waits (tests inject a fake one). @default the system clock */
  clock?: Clock | undefined;
  /** Random source in [0, 1) for jitter. @default Math.random */
  random?: (() => number) | undefined;
  /**
   * Deadline of every request of this client, in ms, retries and body included; `0` for none.
   * A request's own `timeoutMs` overrides it. @default 60000 for `call()`, 30000 for reads
   */
  timeoutMs?: number | undefined;
  /**
   * Largest answer body accepted, in decoded bytes; past it the request fails with
   * `svc_sdk_response_too_large` and the connection is closed. @default 16777216 (16 MiB)
   */
  maxResponseBytes?: number | undefined;
  /**
   * Remember the receipt chain's checkpoint between calls (e.g. `new FileCheckpointStore(path)`):
   * every `verifyRefund` then checks that the history the indexer serves extends the last
   * checkpoint verified, and saves the new one; a fork rejects with `SvcError`
   * `svc_sdk_history_rewritten`. The history is walked from batch 1, except from a checkpoint
   * this client verified that way itself (see `verifyConsistency`). Off without a store.
   */
  checkpointStore?: CheckpointStore | undefined;
}

export interface CallOptions {
  /** @default 'POST' (other methods only where the endpoint allows them) */
  method?: string | undefined;
  /**
   * Request body: a string, bytes (`Uint8Array`, `ArrayBuffer`), `Blob`, `URLSearchParams` or
   * `FormData` as it is; any other value as JSON. Streams are not accepted.
   */
  body?: unknown;
  /** Extra request headers. `User-Agent` is the SDK's, and so is `Authorization` when the client has a key. */
  headers?: HeadersLike | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Deadline for the whole call, retries, waits and body included, in ms (`0`: none); past it
   * the call rejects with `SvcError` `svc_sdk_timeout`, and no retry starts that could not
   * finish before it. @default the client's `timeoutMs`, else 60000
   */
  timeoutMs?: number | undefined;
}

/** The gateway's answer to an admitted call (any status the upstream gave, 3xx and 4xx too). */
export interface CallResult<T = unknown> extends SvcFields {
  status: number;
  /** Response headers, lower-case names. */
  headers: Record<string, string>;
  /** JSON parsed; text types as a string; other types as bytes; null when empty. */
  body: T;
}

export interface ReadOptions {
  signal?: AbortSignal | undefined;
  /**
   * Deadline for the read, retries and body included, in ms (`0`: none); past it the read
   * rejects with `SvcError` `svc_sdk_timeout`. @default the client's `timeoutMs`, else 30000
   */
  timeoutMs?: number | undefined;
}

export interface VerifyRefundOptions extends ReadOptions {
  /**
   * Verify against these keys (a JWKS you saved earlier) instead of the indexer's published
   * `/api/receipts/keys`: a pinned JWKS also catches a key the operator swapped in later.
   */
  jwks?: ReceiptJwks | undefined;
}

export interface ActivityOptions extends ReadOptions {
  /** Calls per page (the indexer's default when absent). */
  limit?: number | undefined;
  /** Start below this point: a `next_before` cursor or an ISO 8601 time. */
  before?: string | undefined;
}

/** Gateway refusals that come before forwarding, with what the gateway asks the caller to wait. */
const REFUSED = new Map<number, ReadonlySet<string>>([
  [429, new Set(['svc_rate_limited'])],
  [503, new Set(['svc_maintenance', 'svc_gateway_not_ready'])],
]);
/** Answers to calls that may have reached the upstream. */
const MAYBE_SENT = new Map<number, string>([
  [502, 'svc_upstream_unavailable'],
  [504, 'svc_upstream_timeout'],
]);

/** The caller's request headers; a bad name or value is a configuration mistake. */
function requestHeaders(init: HeadersLike): Headers {
  try {
    return new Headers(init);
  } catch {
    throw configError('headers must be valid HTTP header names and values');
  }
}

/** A checkpoint whose history from batch 1 a client verified, and the kids of the keys it checked it with. */
interface VerifiedHistory {
  readonly batch: number;
  readonly hash: string;
  readonly kids: readonly string[];
}

/** The kids of the JWKS the keyring took (a receipt below a remembered checkpoint was verified by one of these). */
function trustedKids(jwks: ReceiptJwks, keyring: ReceiptKeyring): string[] {
  const keys: unknown = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) return [];
  return keys
    .map((k: unknown) => (k as { kid?: unknown } | null)?.kid)
    .filter((kid): kid is string => typeof kid === 'string' && keyring.has(kid));
}

/** A key is sent in a header: visible ASCII only. Checked without echoing it. */
const KEY_SHAPE = /^[\x21-\x7e]{1,1024}$/;

export class SvcClient {
  readonly gatewayUrl: string | null;
  readonly apiUrl: string | null;
  readonly indexerUrl: string | null;
  /** Private (#): not enumerable, not shown by `util.inspect`, not in `JSON.stringify`. */
  readonly #key: string | null;
  private readonly fetchImpl: FetchLike;
  private readonly policy: RetryPolicy;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly etags = new EtagMemory();
  private readonly timeoutMs: number | null;
  private readonly maxResponseBytes: number;
  private readonly checkpointStore: CheckpointStore | null;
  /**
   * The newest checkpoint whose whole history, from batch 1, this client verified itself, and
   * the keys it had (in memory only: a new client or process starts without one).
   */
  #verifiedHistory: VerifiedHistory | null = null;

  /** Throws `SvcError` `svc_sdk_config` on a bad option (the key's value is never echoed). */
  constructor(options: SvcClientOptions = {}) {
    if (typeof options !== 'object' || options === null) throw configError('options must be an object');
    this.gatewayUrl = baseUrl('gatewayUrl', options.gatewayUrl);
    this.apiUrl = baseUrl('apiUrl', options.apiUrl);
    this.indexerUrl = baseUrl('indexerUrl', options.indexerUrl);
    if (options.key !== undefined && (typeof options.key !== 'string' || !KEY_SHAPE.test(options.key))) {
      throw configError('key must be printable ASCII without spaces (1 to 1024 characters)');
    }
    this.#key = options.key ?? null;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw configError('no fetch: pass options.fetch or use Node 20 or later');
    this.fetchImpl = f;
    this.policy = retryPolicy(options.retry);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.timeoutMs = options.timeoutMs === undefined ? null : checkTimeout('timeoutMs', options.timeoutMs);
    this.maxResponseBytes =
      options.maxResponseBytes === undefined ? DEFAULT_MAX_RESPONSE_BYTES : checkMaxBytes('maxResponseBytes', options.maxResponseBytes);
    this.checkpointStore = options.checkpointStore ?? null;
  }

  /** Keep the key out of `console.log(client)` and `JSON.stringify(client)`. */
  toJSON(): Record<string, unknown> {
    return { gatewayUrl: this.gatewayUrl, apiUrl: this.apiUrl, indexerUrl: this.indexerUrl, key: this.#key === null ? null : '[redacted]' };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `SvcClient ${JSON.stringify(this.toJSON())}`;
  }

  /**
   * Call `{gatewayUrl}/v1/<endpoint>/<path>`. Resolves with the upstream's answer, whatever
   * its status, and the gateway's verdict (`callId`, `outcome`, `refund`, `premium`,
   * `latencyMs`; null when the gateway did not say). Rejects with {@link SvcError} when the
   * gateway answers with its own problem+json (refusals, 502, 504…), after the retries the
   * policy allows, and with an `svc_sdk_…` code on any other failure (configuration, network,
   * timeout, size, malformed answer).
   */
  async call<T = unknown>(endpoint: string, path: string, options: CallOptions = {}): Promise<CallResult<T>> {
    if (this.gatewayUrl === null) throw configError('gatewayUrl is not set: call() needs the gateway');
    const url = gatewayTarget(this.gatewayUrl, endpoint, path);
    const method = options.method ?? 'POST';
    if (typeof method !== 'string') throw configError('method must be a string');
    const headers = requestHeaders(options.headers);
    const body = encodeBody(options.body, headers);
    headers.set('user-agent', USER_AGENT);
    if (this.#key !== null) headers.set('authorization', `Bearer ${this.#key}`);
    const idempotent = method.toUpperCase() === 'GET' || method.toUpperCase() === 'HEAD';

    return withRetries<CallResult<T>>(
      this.attemptOptions(options, idempotent, DEFAULT_CALL_TIMEOUT_MS),
      async (signal, n): Promise<AttemptResult<CallResult<T>>> => {
        const res = await this.fetchImpl(url, { method, headers, body: body ?? null, signal, redirect: 'manual' });
        const fields = svcFields(res, n);
        const bytes = await readBody(res, this.maxResponseBytes, { callId: fields.callId, attempts: n });
        const contentType = res.headers.get('content-type');
        const problem = res.status >= 400 ? parseProblem(contentType, new TextDecoder().decode(bytes), res.status) : null;
        if (problem === null) {
          return {
            ok: true,
            value: { status: res.status, headers: headerRecord(res.headers), body: decodeBody(bytes, contentType) as T, ...fields },
          };
        }
        const error = this.error(problem, res, fields.callId, n);
        return { ok: false, error, failure: this.failureOf(res, problem, fields.callId) };
      },
    );
  }

  // -------------------------------------------------------------------------------------
  // Public reads

  /** `GET {apiUrl}/api/v1/providers`: every provider's tier and failure rate. */
  providers(options: ReadOptions = {}): Promise<ProvidersAnswer> {
    return this.read<ProvidersAnswer>('apiUrl', this.apiUrl, '/api/v1/providers', options);
  }

  /** `GET {apiUrl}/api/v1/status`: bootstrap, settler, gate, maintenance, latest changelog. */
  status(options: ReadOptions = {}): Promise<StatusAnswer> {
    return this.read<StatusAnswer>('apiUrl', this.apiUrl, '/api/v1/status', options);
  }

  /** `GET {apiUrl}/api/v1/changelog[?limit=N]`: the public changelog, newest first. */
  changelog(options: ReadOptions & { limit?: number | undefined } = {}): Promise<PublicChangelogAnswer> {
    const query = options.limit === undefined ? '' : `?limit=${encodeURIComponent(String(options.limit))}`;
    return this.read<PublicChangelogAnswer>('apiUrl', this.apiUrl, `/api/v1/changelog${query}`, options);
  }

  /** `GET {indexerUrl}/api/stats`: pool, settlement totals, recent settled calls. */
  stats(options: ReadOptions = {}): Promise<StatsAnswer> {
    return this.read<StatsAnswer>('indexerUrl', this.indexerUrl, '/api/stats', options);
  }

  /**
   * The indexer's `/api/activity`, page after page (newest calls first), following each
   * page's `next_before` cursor until the last page. Stop early with `break`.
   *
   * ```ts
   * for await (const page of svc.activity({ limit: 100 })) for (const call of page.activity) …
   * ```
   */
  activity(options: ActivityOptions = {}): AsyncIterableIterator<ActivityPage> {
    const base = this.indexerUrl;
    const read = (path: string) => this.read<ActivityPage>('indexerUrl', base, path, options);
    return pagesBefore('/api/activity', read, options);
  }

  /**
   * Check a call's refund yourself: fetch `GET {indexerUrl}/api/calls/<callId>/proof` and
   * verify, with no access to control, that the call's leaf (its outcome, premium, refund and
   * clamp, in RFC 8785 canonical JSON) climbs the RFC 9162 audit path to the root of its
   * batch's receipt, in a tree of the receipt's size, and that the receipt is signed by a key
   * of the JWKS (`options.jwks` when given, else the published `/api/receipts/keys`).
   *
   * Resolves `{ ok, refund, premium, outcome, batch, reasons }`: `ok` is true only when every
   * check passed; `reasons` says what failed. Rejects with {@link SvcError} when the indexer
   * answers a problem: `svc_not_settled` (409) until the call's batch is settled (ask again
   * after the settler's next run), `svc_not_found` (404) for a call id it never recorded.
   */
  async verifyRefund(callId: string, options: VerifyRefundOptions = {}): Promise<RefundVerdict> {
    if (!isCallId(callId)) throw configError('callId must be the X-Svc-Call-Id of a call (a UUIDv7)');
    const proof = await this.read<CallProof>('indexerUrl', this.indexerUrl, `/api/calls/${encodeURIComponent(callId)}/proof`, options);
    const jwks = options.jwks ?? (await this.read<ReceiptJwks>('indexerUrl', this.indexerUrl, '/api/receipts/keys', options));
    let keyring: ReceiptKeyring;
    let verdict: RefundVerdict;
    try {
      keyring = new ReceiptKeyring(jwks);
      verdict = verifyCallProof(proof, keyring, callId.toLowerCase()); // control stores call ids in lowercase
    } catch (err) {
      throw sdkError('svc_sdk_bad_response', 'the proof or the JWKS could not be read', { cause: err });
    }
    if (this.checkpointStore !== null) {
      const saved = await this.checkpointStore.load();
      // The first run has nothing saved: the served checkpoint's own history is walked before it is kept.
      const next = await this.consistentCheckpoint(saved, keyring, trustedKids(jwks, keyring), options);
      await this.checkpointStore.save(next);
    }
    // No amount is taken from a proof that did not verify.
    return verdict.ok ? verdict : { ...verdict, refund: null, premium: null };
  }

  /** `GET {indexerUrl}/api/receipts/checkpoint`: the chain's head, signed (404 `svc_not_found` before the first batch). */
  checkpoint(options: ReadOptions = {}): Promise<Checkpoint> {
    return this.read<Checkpoint>('indexerUrl', this.indexerUrl, '/api/receipts/checkpoint', options);
  }

  /**
   * Check that the history the indexer serves now extends `oldCheckpoint` (one saved earlier from
   * `checkpoint()` or this method) and that the history before it is the one it signed: the
   * served checkpoint is signed, and every receipt from batch 1 to the new checkpoint's batch
   * (`/api/receipts/consistency`, 1000 a read) chains by `prev` and is signed by a key of the JWKS
   * (`options.jwks` or the published one), the one of the old checkpoint's batch hashing to its
   * `hash`. Resolves the served checkpoint: save it for next time. Rejects with `SvcError`
   * `svc_sdk_history_rewritten` (a `HistoryRewrittenError`, with `failure`, `batch`,
   * `checkpointHash` and `servedHash`) when the histories part.
   *
   * The walk starts at batch 1, except when `oldCheckpoint` is the newest checkpoint (same batch
   * and hash) whose whole history THIS client (this object, in memory) verified from batch 1
   * before, with keys all still in the keyring: then it starts at that checkpoint's batch (that
   * receipt must still hash to its `hash`, the later ones are linked and signed), so a client
   * that saves what it gets back pays only for the receipts added since (`{ from: 'checkpoint' }`
   * of `verifyReceiptConsistency`). The trade: a receipt changed below a checkpoint after this
   * client verified it is caught by a new client or process, or by `svcctl receipts verify
   * --since-checkpoint`, which walk from batch 1, not by this client's later checks. That is
   * sound because the checkpoint it holds commits, through the `prev` links, to exactly the
   * history it verified: whatever it accepts later extends that history, and anyone who walks
   * from batch 1 with it sees a change below it. Any other checkpoint (saved by hand or by
   * another process, or one this client did not verify last) is walked from batch 1.
   */
  async verifyConsistency(oldCheckpoint: Checkpoint, options: VerifyRefundOptions = {}): Promise<Checkpoint> {
    const jwks = options.jwks ?? (await this.read<ReceiptJwks>('indexerUrl', this.indexerUrl, '/api/receipts/keys', options));
    const keyring = new ReceiptKeyring(jwks);
    return this.consistentCheckpoint(oldCheckpoint, keyring, trustedKids(jwks, keyring), options);
  }

  /**
   * The served checkpoint, once the history from batch 1 leads through `old` (when given) to it
   * unchanged; from `old`'s batch when this client verified `old`'s history itself (above).
   */
  private async consistentCheckpoint(
    old: Checkpoint | null,
    keyring: ReceiptKeyring,
    kids: readonly string[],
    options: ReadOptions,
  ): Promise<Checkpoint> {
    const current = await this.checkpoint(options);
    const range = async (from: number, to: number) =>
      (await this.read<ConsistencyAnswer>('indexerUrl', this.indexerUrl, `/api/receipts/consistency?from=${from}&to=${to}`, options))
        .receipts;
    const known = this.#verifiedHistory;
    const verifiedBefore =
      old !== null && known !== null && known.batch === old.batch && known.hash === old.hash && known.kids.every((kid) => keyring.has(kid));
    const verdict = await verifyConsistency(old ?? current, current, range, keyring, { from: verifiedBefore ? 'checkpoint' : 'genesis' });
    if (!verdict.ok) throw new HistoryRewrittenError(verdict);
    // Its whole history is now verified: from batch 1, or from a checkpoint whose history was.
    if (known === null || current.batch >= known.batch) this.#verifiedHistory = { batch: current.batch, hash: current.hash, kids };
    return current;
  }

  /**
   * `GET {apiUrl}/api/v1/account[?window=24h|7d|30d]` with the client's key: the key's limit,
   * its calls by outcome, and the refunds and premiums settled over the window (ledger money)
   * and pending (an estimate: price and premium of the calls not settled yet). Rejects with
   * {@link SvcError} `svc_unauthorized` (401) for a key that is unknown, revoked or expired.
   */
  account(options: AccountOptions = {}): Promise<AccountAnswer> {
    const auth = this.keyHeader();
    if (auth === null) return Promise.reject(configError('key is not set: the account is read with the beta key'));
    return this.read<AccountAnswer>('apiUrl', this.apiUrl, accountPath(options), options, auth);
  }

  /**
   * The key's own calls (`GET {apiUrl}/api/v1/account/calls`), page after page, newest first,
   * following `next_before` until the last page. Stop early with `break`.
   *
   * ```ts
   * for await (const page of svc.calls({ limit: 100 })) for (const call of page.calls) …
   * ```
   */
  calls(options: AccountCallsOptions = {}): AsyncIterableIterator<AccountCallsPage> {
    const auth = this.keyHeader();
    const base = this.apiUrl;
    return pagesBefore(
      '/api/v1/account/calls',
      (path) => {
        if (auth === null) return Promise.reject(configError('key is not set: the account is read with the beta key'));
        return this.read<AccountCallsPage>('apiUrl', base, path, options, auth);
      },
      options,
    );
  }

  // -------------------------------------------------------------------------------------

  /** `Authorization` with the client's key, or null without one. */
  private keyHeader(): Record<string, string> | null {
    return this.#key === null ? null : { authorization: `Bearer ${this.#key}` };
  }

  /** The attempt loop's options; the deadline is the request's, else the client's, else `defaultTimeoutMs`. */
  private attemptOptions(options: { signal?: AbortSignal; timeoutMs?: number }, idempotent: boolean, defaultTimeoutMs: number) {
    return {
      policy: this.policy,
      clock: this.clock,
      random: this.random,
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? this.timeoutMs ?? defaultTimeoutMs,
      idempotent,
    };
  }

  private error(problem: Problem, res: Response, callId: string | null, attempts: number): SvcError {
    return new SvcError(problem, { headers: headerRecord(res.headers), callId, attempts, status: res.status });
  }

  /** Whether a problem answer may be retried, and after how long. */
  private failureOf(res: Response, problem: Problem, callId: string | null): Failure {
    // A refusal never carries a call id: nothing was forwarded. An upstream's own 429 or 503
    // (which has one) is its answer, not the gateway's refusal.
    if (callId === null && REFUSED.get(res.status)?.has(problem.code)) {
      return { kind: 'refused', waitMs: serverWaitMs(res.headers, this.clock.now()) };
    }
    if (MAYBE_SENT.get(res.status) === problem.code) return { kind: 'maybe-sent' };
    return { kind: 'final' };
  }

  /**
   * GET a public JSON answer with `If-None-Match` when one is remembered; a 304 reuses the
   * remembered body. No key is sent to the public API or the indexer, except as `extraHeaders`
   * for the key's own account.
   */
  private read<T>(
    name: string,
    base: string | null,
    path: string,
    options: ReadOptions,
    extraHeaders?: Record<string, string>,
  ): Promise<T> {
    if (base === null) return Promise.reject(configError(`${name} is not set: this read needs it`));
    const url = base + path;
    return withRetries<T>(this.attemptOptions(options, true, DEFAULT_READ_TIMEOUT_MS), async (signal, n): Promise<AttemptResult<T>> => {
      const headers = new Headers({ ...extraHeaders, 'user-agent': USER_AGENT, accept: 'application/json' });
      const remembered = this.etags.get(url);
      if (remembered !== undefined) headers.set('if-none-match', remembered.etag);
      const res = await this.fetchImpl(url, { method: 'GET', headers, signal, redirect: 'manual' });
      const text = new TextDecoder().decode(await readBody(res, this.maxResponseBytes, { callId: null, attempts: n }));
      const bad = (detail: string, cause?: unknown) =>
        sdkError('svc_sdk_bad_response', `GET ${path}: ${detail}`, {
          status: res.status,
          headers: headerRecord(res.headers),
          attempts: n,
          cause,
        });
      if (res.status === 304 && remembered !== undefined) return { ok: true, value: JSON.parse(remembered.text) as T };
      if (res.status === 200) {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (err) {
          throw bad('the answer is not JSON', err);
        }
        // Every answer of svc's reads is a JSON object.
        if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('the answer is not a JSON object');
        const etag = res.headers.get('etag');
        if (etag !== null) this.etags.set(url, etag, text);
        else this.etags.forget(url);
        return { ok: true, value: value as T };
      }
      const problem = parseProblem(res.headers.get('content-type'), text, res.status);
      if (problem === null) throw bad(`HTTP ${res.status} without svc's problem+json body`);
      const error = this.error(problem, res, null, n);
      if (REFUSED.get(res.status)?.has(problem.code)) {
        return { ok: false, error, failure: { kind: 'refused', waitMs: serverWaitMs(res.headers, this.clock.now()) } };
      }
      throw error;
    });
  }
}
