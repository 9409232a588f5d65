/**
 * Keeps the gateway's state in step with control (docs/design.md §4). Dials `/_sync/v1/stream` with
 * the sync token, announcing its id, held version, epoch and proxy engine; applies full snapshots and deltas
 * atomically; persists each applied update; acks `{version, sha256}` or nacks (keeping the old
 * state); reconnects with jittered exponential backoff when the stream ends or goes silent.
 * Silent means no line for `SILENCE_BEATS` of the beat interval control announces on the stream
 * (`SYNC_BEAT_HEADER`; 30 s from a control older than beats), or no answer to the stream's
 * request within `ANSWER_LIMIT_MS`: a control that hangs (stopped, its sockets still open) is
 * left within seconds, as one that died is.
 * Takes `share` lines (its share of key limits) whenever they come, and `coverage` lines, each
 * with the `ingested` line right before it if there is one (what control had ingested when it
 * evaluated that line, coverage.ts); other line types it does not know it passes over. Answers
 * each ping with a lease renewal while it holds a state, so control counts it as live.
 *
 * It announces the process's `instance` (protocol/budgets.ts): control then sends keys' accounts,
 * prepaid endpoints and, in deltas, `accounts_funded`, which it hands to `onFunded` once the
 * delta is applied (the budgets ask again for those accounts at once). A control older than
 * prepaid billing refuses the unknown parameter (400 naming `instance`): the gateway dials that
 * control again at once without it, and so holds no budgets there (it is sent no accounts and no
 * prepaid endpoints), and names its instance again on the next stream after that one ends.
 *
 * With several controls (`controlUrls`), each failed stream is reported to the shared
 * `ControlEndpoints`, so the reconnect (after the same backoff) dials the next control in the
 * list, announcing the same version and epoch: a control on the same database answers with a
 * delta from that version.
 */
import type http from 'node:http';
import { createInterface } from 'node:readline';
import { hasCode } from '../../protocol/coded-error';
import type { Logger } from '../../runtime/log';
import {
  SYNC_ACK_PATH,
  SYNC_BEAT_HEADER,
  SYNC_BEAT_INTERVAL_MS,
  SYNC_PING_INTERVAL_MS,
  SYNC_STREAM_PATH,
  IngestedLine,
  SnapshotEnd,
  verifySealedLine,
  type SyncAck,
} from '../../protocol/snapshot';
import { ControlTimeoutError, SyncHttp, type ControlEndpoints } from '../control-link/sync-http';
import { SyncPoster } from '../control-link/sync-post';
import { parseDelta } from './delta-line';
import type { Coverage } from './coverage';
import type { LimitShare } from './share';
import type { SnapshotFile, FullSnapshotWriter } from './snapshot-file';
import { SnapshotBuilder, UpdateRejected, safeJson, type GatewayState } from './state';

/** First reconnect delay; doubles up to the max, with full jitter. @default 250 ms */
export const RECONNECT_BASE_MS = 250;
/** @default 10 s */
export const RECONNECT_MAX_MS = 10_000;
/** Beats a stream may miss in a row before the gateway takes its control for hung. @default 3 */
export const SILENCE_BEATS = 3;
/** A stream from a control that announces no beat (older than beats) is dead after this much silence. @default 3 pings */
export const SILENCE_LIMIT_MS = SYNC_PING_INTERVAL_MS * 3;
/** A control that has not answered the stream's request within this is taken for hung. @default 3 beats */
export const ANSWER_LIMIT_MS = SYNC_BEAT_INTERVAL_MS * SILENCE_BEATS;

/**
 * The `SyncPoster` key an ack, nack or lease renewal waits under: a newer one replaces a
 * waiting one of its key. A newer ack covers an older (acks grow in version), but a renewal
 * records no version and must not replace an ack, and a nack is kept beside a later ack so
 * control hears of it.
 */
export function ackKey(body: SyncAck): 'ack' | 'nack' | 'renew' {
  return body.renew === true ? 'renew' : body.ok ? 'ack' : 'nack';
}

/**
 * How long a stream may stay silent, given its answer's beat header: `SILENCE_BEATS` beats, or
 * `SILENCE_LIMIT_MS` when control announced none (or a beat outside 100 ms to a ping interval).
 */
export function silenceLimitMs(beatHeader: string | string[] | undefined): number {
  const beat = typeof beatHeader === 'string' && /^\d{1,6}$/.test(beatHeader) ? Number(beatHeader) : NaN;
  return beat >= 100 && beat <= SYNC_PING_INTERVAL_MS ? beat * SILENCE_BEATS : SILENCE_LIMIT_MS;
}

/** What an update from control was: a full snapshot or a delta from the version held. */
export type UpdateKind = 'snapshot' | 'delta';

export interface SyncClientOptions {
  /** Control's URL, or the gateway's controls (shared with the shipper). */
  controlUrl: string | ControlEndpoints;
  syncToken: string;
  gatewayId: string;
  /** The proxy engine this gateway forwards with, announced to control on every connect. */
  engine: string;
  /** This process run's id, announced on every connect: the gateway holds prepaid budgets. */
  instance?: string;
  /** Called after a delta naming `accounts_funded` is applied, with those accounts. */
  onFunded?: (accounts: readonly string[]) => void;
  file: SnapshotFile;
  log: Logger;
  /** Called after every applied update with the state now in force. */
  onState: (state: GatewayState) => void;
  /** Called after every applied update with its kind (counted in the metrics). */
  onUpdate?: (kind: UpdateKind) => void;
  /** Where `share` lines go (absent: they are ignored). */
  share?: LimitShare;
  /** Where `coverage` lines go (absent: they are ignored). */
  coverage?: Coverage;
  initial: GatewayState | null;
}

export class SyncClient {
  private readonly opts: SyncClientOptions;
  private readonly control: SyncHttp;
  /** Acks, nacks and lease renewals: one small POST per change, on a connection of their own. */
  private readonly acks: SyncPoster;
  private state: GatewayState | null;
  private req: http.ClientRequest | null = null;
  private attempt = 0;
  /** The control in use refused `instance` on the stream: dial without it until that stream ends. */
  private instanceRefused = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;
  /** True while a stream is open and has delivered its first line. */
  connected = false;
  lastError: string | null = null;
  lastNack: string | null = null;

  constructor(opts: SyncClientOptions) {
    this.opts = opts;
    this.control = new SyncHttp({ controlUrl: opts.controlUrl, syncToken: opts.syncToken, maxSockets: 4 });
    this.acks = new SyncPoster(this.control.endpoints, `Bearer ${opts.syncToken}`);
    this.state = opts.initial;
  }

  start(): void {
    this.dial();
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.clearSilence();
    this.req?.destroy();
    this.control.close();
    this.acks.close();
  }

  /** The control the stream goes to now. */
  get controlUrl(): string {
    return this.control.endpoints.current;
  }

  private dial(): void {
    if (this.stopped) return;
    // The control this stream is on: a failure of it moves the shared choice to the next one.
    const at = this.control.endpoints.current;
    const url = this.control.url(SYNC_STREAM_PATH);
    url.searchParams.set('gateway_id', this.opts.gatewayId);
    url.searchParams.set('version', String(this.state?.version ?? 0));
    if (this.state) url.searchParams.set('epoch', String(this.state.epoch));
    url.searchParams.set('engine', this.opts.engine);
    const named = this.opts.instance !== undefined && !this.instanceRefused;
    if (named) url.searchParams.set('instance', this.opts.instance!);
    const req = this.control.stream(url);
    this.req = req;
    // A control that hangs still accepts the connection (its kernel does), but never answers.
    this.armSilence(ANSWER_LIMIT_MS, `control did not answer the sync stream within ${ANSWER_LIMIT_MS} ms`, true);
    req.on('response', (res) => {
      const silenceMs = silenceLimitMs(res.headers[SYNC_BEAT_HEADER]);
      this.armSilence(silenceMs, `no word from control for ${silenceMs} ms`, false);
      if (res.statusCode !== 200) {
        this.lastError = `control answered ${res.statusCode} on the sync stream`;
        if (named && res.statusCode === 400) return this.maybeWithoutInstance(res, at);
        res.resume();
        res.on('end', () => this.retry(at));
        return;
      }
      this.consume(res, at);
    });
    req.on('error', (err) => {
      this.lastError = `sync stream: ${err.message}`;
      this.retry(at);
    });
  }

  /**
   * A 400 to a stream that named the instance: when control's problem names the `instance`
   * parameter, it predates prepaid budgets, and the same control is dialled again at once
   * without it (no backoff, no move); any other 400 is retried as usual.
   */
  private maybeWithoutInstance(res: http.IncomingMessage, at: string): void {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += text.length < 4096 ? chunk : ''));
    res.on('error', () => undefined);
    res.on('end', () => {
      if (!/"field":"instance"/.test(text)) return this.retry(at);
      this.instanceRefused = true;
      this.opts.log.warn('control does not take an instance on the sync stream; syncing without prepaid budgets', { control_url: at });
      this.clearSilence();
      this.req = null;
      this.dial();
    });
  }

  /**
   * Start the silence countdown: when `ms` pass without {@link heard}, the stream is given up
   * with `reason`, before its answer by failing the request ('error'), after it by closing the
   * answer ('close').
   */
  private armSilence(ms: number, reason: string, beforeAnswer: boolean): void {
    this.clearSilence();
    this.silenceTimer = setTimeout(() => {
      this.lastError = reason;
      this.req?.destroy(beforeAnswer ? new ControlTimeoutError(reason) : undefined);
    }, ms);
    this.silenceTimer.unref();
  }

  /** A line came: restart the countdown (the timer is moved, not made anew). */
  private heard(): void {
    this.silenceTimer?.refresh();
  }

  private clearSilence(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = null;
  }

  /** The stream to the control at `at` is over: dial again after a backoff, the next control if there are several. */
  private retry(at: string): void {
    this.connected = false;
    this.req = null;
    this.clearSilence();
    if (this.stopped || this.retryTimer) return;
    this.control.endpoints.failed(at, this.lastError);
    const cap = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 16);
    const delay = Math.floor(Math.random() * cap);
    this.opts.log.debug('sync reconnect scheduled', { delay_ms: delay, reason: this.lastError });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.dial();
    }, delay);
    this.retryTimer.unref();
  }

  private consume(res: http.IncomingMessage, at: string): void {
    let builder: SnapshotBuilder | null = null;
    let writer: FullSnapshotWriter | null = null;
    /** The `ingested` line just read: it speaks of the coverage line right after it, and of no other. */
    let ingested: IngestedLine | null = null;
    const lines = createInterface({ input: res, crlfDelay: Infinity });
    const failSnapshot = (version: number, reason: string) => {
      writer?.abort();
      writer = null;
      builder = null;
      this.nack(version, reason);
    };
    lines.on('line', (line) => {
      this.heard();
      if (!this.connected) {
        this.connected = true;
        this.attempt = 0;
        this.lastError = null;
      }
      if (line === '') return;
      const before = ingested;
      ingested = null;
      try {
        if (line.startsWith('{"type":"snapshot_begin"')) {
          writer?.abort();
          builder = null;
          writer = this.opts.file.beginFull();
          builder = new SnapshotBuilder(line);
          writer.write(line);
        } else if (line.startsWith('{"type":"keys"')) {
          if (!builder || !writer) throw new UpdateRejected('keys line outside a snapshot');
          builder.addKeysLine(line);
          writer.write(line);
        } else if (line.startsWith('{"type":"snapshot_end"')) {
          const end = SnapshotEnd.safeParse(safeJson(line));
          if (!end.success || !builder || !writer) throw new UpdateRejected('unexpected snapshot_end');
          const next = builder.finish(end.data.version, end.data.sha256);
          writer.write(line);
          writer.commit();
          writer = null;
          builder = null;
          this.install(next);
          this.opts.onUpdate?.('snapshot');
          this.ackVersion(next.version, end.data.sha256);
        } else if (line.startsWith('{"type":"delta"')) {
          this.applyDeltaLine(line);
        } else if (line.startsWith('{"type":"share"')) {
          this.applyShareLine(line);
        } else if (line.startsWith('{"type":"coverage"')) {
          this.applyCoverageLine(line, before);
        } else if (line.startsWith('{"type":"ingested"')) {
          ingested = this.ingestedLine(line);
        } else if (line.startsWith('{"type":"ping"') && this.state) {
          // Renew the lease: control divides the key limits among gateways that answer.
          this.post({ gateway_id: this.opts.gatewayId, version: this.state.version, ok: true, renew: true });
        }
      } catch (err) {
        const reason = hasCode(err, 'SVC_ERR_UPDATE_REJECTED') ? err.message : `internal: ${(err as Error).message}`;
        failSnapshot(builder ? builder.version : this.versionOf(line), reason);
      }
    });
    const ended = () => {
      writer?.abort();
      writer = null;
      // The next stream names the instance again: the control may have been upgraded meanwhile.
      this.instanceRefused = false;
      this.clearSilence();
      if (!this.lastError) this.lastError = 'sync stream ended';
      this.retry(at);
    };
    // A reset stream is an ordinary disconnect: 'close' follows and schedules the reconnect.
    res.on('error', () => undefined);
    lines.on('error', () => undefined);
    res.on('close', ended);
  }

  private versionOf(line: string): number {
    const match = /"version":(\d+)/.exec(line);
    return match ? Number(match[1]) : 0;
  }

  private applyDeltaLine(line: string): void {
    const sha256 = verifySealedLine(line);
    if (sha256 === null) throw new UpdateRejected('delta seal does not match its content');
    const parsed = parseDelta(safeJson(line));
    if (!parsed.success) throw new UpdateRejected(`bad delta: ${parsed.message}`);
    if (!this.state) throw new UpdateRejected('delta received before any snapshot');
    this.state.applyDelta(parsed.data);
    this.opts.file.appendDelta(line);
    this.opts.onState(this.state);
    this.opts.onUpdate?.('delta');
    const funded = parsed.data.accounts_funded;
    if (funded !== undefined && funded.length > 0) this.opts.onFunded?.(funded);
    this.ackVersion(parsed.data.version, sha256);
  }

  /** Not part of the versioned state: never nacked, and it may come between a snapshot's lines. */
  private applyShareLine(line: string): void {
    const share = this.opts.share;
    if (!share) return;
    if (share.apply(sideLine(line))) this.opts.log.info('limit share applied', { ...share.state });
    else this.opts.log.warn('share line ignored: it does not parse', { line: line.slice(0, 200) });
  }

  /** Like a share line: not versioned, never nacked, and it may come between a snapshot's lines. */
  private applyCoverageLine(line: string, ingested: IngestedLine | null): void {
    const coverage = this.opts.coverage;
    if (!coverage) return;
    const before = coverage.state?.covered;
    if (!coverage.apply(sideLine(line), ingested))
      this.opts.log.warn('coverage line ignored: it does not parse', { line: line.slice(0, 200) });
    else if (coverage.state!.covered !== before) this.opts.log.info('coverage changed', { covered: coverage.state!.covered });
  }

  /** An `ingested` line, or null when it does not parse (its coverage line then proves nothing, as from an older control). */
  private ingestedLine(line: string): IngestedLine | null {
    const parsed = IngestedLine.safeParse(sideLine(line));
    if (parsed.success) return parsed.data;
    this.opts.log.warn('ingested line ignored: it does not parse', { line: line.slice(0, 200) });
    return null;
  }

  private install(state: GatewayState): void {
    this.state = state;
    this.opts.onState(state);
    this.opts.log.info('snapshot applied', { version: state.version, keys: state.keyCount, endpoints: state.endpoints.size });
  }

  private ackVersion(version: number, sha256: string): void {
    this.post({ gateway_id: this.opts.gatewayId, version, sha256, ok: true });
  }

  private nack(version: number, reason: string): void {
    this.lastNack = `v${version}: ${reason}`;
    this.opts.log.warn('sync update rejected; keeping the previous state', { version, reason });
    this.post({ gateway_id: this.opts.gatewayId, version, ok: false, reason: reason.slice(0, 1000) });
  }

  private post(body: SyncAck): void {
    const key = ackKey(body);
    this.acks.post(SYNC_ACK_PATH, JSON.stringify(body), key).then(
      (status) => {
        if (status !== 200) this.opts.log.warn('sync ack not accepted', { status, version: body.version });
      },
      (err: unknown) => {
        // A lost ack is harmless: on reconnect the gateway announces the version it holds. A
        // control that does not answer is told, once per request; the stream finds it hung too.
        if (hasCode(err, 'SVC_ERR_SYNC_POST_TIMEOUT') || hasCode(err, 'SVC_ERR_SYNC_POST_QUEUE_FULL'))
          this.opts.log.warn('sync ack failed', { err, version: body.version, key });
        else if (!hasCode(err, 'SVC_ERR_SYNC_POST_CLOSED')) this.opts.log.debug('sync ack failed', { err, version: body.version });
      },
    );
  }
}

/**
 * A side line (`share`, `coverage`, `ingested`) as JSON, or null when it is not: its schema
 * then refuses it, and the line is logged and passed over like any that does not parse.
 */
function sideLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return null;
  }
}
