/**
 * Ships journaled outcome records to control (`POST /_sync/v1/outcomes`) in batches and acks
 * them in the journal only after control answered 200, i.e. after control committed them.
 * Control stores records idempotently by call id, so a batch resent after a lost answer is
 * harmless. Failures back off exponentially; nothing is dropped.
 *
 * A batch control refuses as invalid (400, or 413 too large) is never resent as it was:
 * batches shrink tenfold until the refused records are sent alone, and a record control
 * refuses on its own is set aside in the journal's `rejected.jsonl` (with control's reason)
 * instead of blocking every record after it.
 *
 * With several controls (`controlUrls`), every batch goes to the control the shared
 * `ControlEndpoints` names now: a batch that failed on a control that went away (unacked, so
 * still pending in the journal) is resent to the next one at once, without the backoff. A batch
 * still waiting for its answer when the gateway moves is given up at once (the control left
 * behind may be hung and never answer) and sent to the next.
 *
 * Whoever waits on records reaching control (`onAcked`: the gateway's coverage, which counts
 * covered failures against its allowance until control has provably seen them) is told the call
 * ids of each batch control committed, with control's answer, and of each record set aside
 * (with none). Ids are read only while it says it `waits`: a batch costs one short string per
 * record then, and nothing otherwise.
 */
import { CodedError } from '../../protocol/coded-error';
import type { Logger } from '../../runtime/log';
import { SYNC_OUTCOMES_PATH } from '../../protocol/snapshot';
import type { OutcomeAck } from '../../protocol/outcome';
import { ControlAnswerError, SyncHttp, type ControlEndpoints } from '../control-link/sync-http';
import type { Journal, TailBatch } from './journal';

const PAYLOAD_END = Buffer.from(']}');

/** Records per batch. @default 5000 */
export const SHIP_BATCH = 5_000;
/** How often an idle shipper looks at the journal. @default 200 ms */
export const SHIP_INTERVAL_MS = 200;
/** Longest pause after failures. @default 10 s */
export const SHIP_MAX_BACKOFF_MS = 10_000;

export interface ShipperOptions {
  /** Control's URL, or the gateway's controls (shared with the sync client, which moves between them). */
  controlUrl: string | ControlEndpoints;
  syncToken: string;
  gatewayId: string;
  journal: Journal;
  log: Logger;
  onShipped?: (count: number) => void;
  onFailure?: () => void;
  /** A record control refused on its own was set aside. */
  onRejected?: () => void;
  /** Told which records control committed (with its answer) or were set aside (null). */
  onAcked?: AckListener;
}

/** What waits on records reaching control, by call id. */
export interface AckListener {
  /** Whether it waits on any record now: ids are read only then. */
  readonly waits: boolean;
  /** Control committed these records (`ack`, its answer), or they were set aside (null: control never took them). */
  acked(callIds: readonly string[], ack: OutcomeAck | null): void;
}

/** The batch in flight was abandoned because the gateway moved to another control; it is sent there. */
export class ControlMovedError extends CodedError {
  override readonly code = 'SVC_ERR_CONTROL_MOVED';

  constructor() {
    super('the gateway moved to another control');
  }
}

/** Control refused the batch itself (a record it will never take, or too large): narrow it down instead of retrying. */
const refusedByControl = (err: unknown): err is ControlAnswerError =>
  err instanceof ControlAnswerError && (err.status === 400 || err.status === 413);

export class OutcomeShipper {
  private readonly opts: ShipperOptions;
  private readonly control: SyncHttp;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** The batch on the wire, if any: `ship`'s promise. */
  private shipping: Promise<boolean> | null = null;
  private stopped = false;
  private failures = 0;
  /** Aborts the batch on the wire, if any. */
  private inFlight: AbortController | null = null;
  /** Records per batch: SHIP_BATCH, or fewer while isolating records control refused. */
  private batch = SHIP_BATCH;
  /** The batch document up to the first record. */
  private readonly payloadHead: Buffer;

  constructor(opts: ShipperOptions) {
    this.opts = opts;
    this.payloadHead = Buffer.from(`{"gateway_id":${JSON.stringify(opts.gatewayId)},"records":[`);
    this.control = new SyncHttp({ controlUrl: opts.controlUrl, syncToken: opts.syncToken, maxSockets: 1 });
    // Another control took over: what waits for a retry goes to it now.
    this.control.endpoints.onMove(() => {
      this.failures = 0;
      this.inFlight?.abort(new ControlMovedError());
      if (!this.running) this.schedule(0);
    });
  }

  start(): void {
    this.schedule(0);
  }

  /**
   * Ship what is pending now (used at shutdown); resolves when the journal is empty or a send
   * failed. A batch already on the wire (the background loop's) is waited for first, then the
   * records written after it are shipped too.
   */
  async drain(): Promise<void> {
    for (;;) {
      if (this.shipping !== null) await this.shipping;
      if (this.opts.journal.backlog() === 0) return;
      if (!(await this.ship())) return;
    }
  }

  /** One batch, remembered while it is on the wire so `drain` can wait for it. */
  private ship(): Promise<boolean> {
    const shipping: Promise<boolean> = this.shipOnce().finally(() => {
      if (this.shipping === shipping) this.shipping = null;
    });
    this.shipping = shipping;
    return shipping;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.control.close();
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.running || this.stopped) return;
    const at = this.control.endpoints.current;
    const ok = this.opts.journal.backlog() === 0 ? true : await this.ship();
    if (ok) {
      this.failures = 0;
      const backlog = this.opts.journal.backlog();
      this.schedule(backlog >= SHIP_BATCH || (this.batch < SHIP_BATCH && backlog > 0) ? 0 : SHIP_INTERVAL_MS);
    } else if (this.control.endpoints.current !== at) {
      // The control went away while the batch was in flight: resend it to the next one now.
      this.failures = 0;
      this.schedule(0);
    } else {
      this.failures++;
      const cap = Math.min(SHIP_MAX_BACKOFF_MS, SHIP_INTERVAL_MS * 2 ** this.failures);
      this.schedule(cap / 2 + Math.random() * (cap / 2));
    }
  }

  private async shipOnce(): Promise<boolean> {
    // The journal holds the records' JSON already; control validates every one.
    const fast = this.batch === SHIP_BATCH ? this.opts.journal.pendingBatch(SHIP_BATCH, this.payloadHead, PAYLOAD_END) : null;
    if (fast !== null) return this.shipBatch(fast);
    const { ids, lines } = this.opts.journal.pendingLines(this.batch);
    if (ids.length === 0) return true;
    this.running = true;
    try {
      const ack = await this.post(Buffer.concat([this.payloadHead, Buffer.from(lines.join(',')), PAYLOAD_END]));
      this.opts.journal.ack(ids);
      if (this.opts.onAcked?.waits) this.opts.onAcked.acked(ids, ack);
      this.opts.onShipped?.(ids.length);
      this.batch = Math.min(SHIP_BATCH, this.batch * 10);
      return true;
    } catch (err) {
      if (refusedByControl(err)) return this.refused(ids, lines, err);
      this.opts.onFailure?.();
      this.opts.log.warn('outcome batch not shipped; will retry', { records: ids.length, err });
      return false;
    } finally {
      this.running = false;
    }
  }

  /**
   * The common case: records straight from the journal's memory, already framed as the whole
   * document (no copy per batch), acked by position. One batch is in flight at a time, so the
   * journal's scratch memory holding it is not reused before control answered.
   */
  private async shipBatch(batch: TailBatch): Promise<boolean> {
    this.running = true;
    try {
      const ack = await this.post(batch.body);
      const listener = this.opts.onAcked;
      // The ids before the ack lets the records go.
      const ids = listener?.waits === true ? this.opts.journal.batchIds(batch) : null;
      const acked = this.opts.journal.ackBatch(batch);
      if (ids !== null) listener?.acked(ids, ack);
      this.opts.onShipped?.(acked);
      return true;
    } catch (err) {
      // Find the refused records with smaller batches, one id at a time.
      if (refusedByControl(err)) return this.narrow(batch.count, err);
      this.opts.onFailure?.();
      this.opts.log.warn('outcome batch not shipped; will retry', { records: batch.count, err });
      return false;
    } finally {
      this.running = false;
    }
  }

  /** Control refused the batch as invalid: narrow it down, or set a lone record aside. */
  private refused(ids: string[], lines: string[], err: Error): boolean {
    if (ids.length > 1) return this.narrow(ids.length, err);
    this.opts.journal.reject(ids[0]!, lines[0]!, err.message);
    this.opts.onRejected?.();
    if (this.opts.onAcked?.waits) this.opts.onAcked.acked([ids[0]!], null);
    this.opts.log.error("control refused an outcome record; kept in the journal's rejected.jsonl", {
      call_id: ids[0],
      reason: err.message,
    });
    return true;
  }

  /** Control refused a batch of `records` as invalid: the next batches are a tenth of it. */
  private narrow(records: number, err: Error): boolean {
    this.batch = Math.max(1, Math.floor(records / 10));
    this.opts.log.warn('control refused an outcome batch; sending smaller batches to find the refused records', {
      records,
      next_batch: this.batch,
      err,
    });
    return true;
  }

  private async post(payload: Buffer): Promise<OutcomeAck> {
    const inFlight = new AbortController();
    this.inFlight = inFlight;
    let answer: { status: number; text: string };
    try {
      answer = await this.control.post(SYNC_OUTCOMES_PATH, payload, 30_000, inFlight.signal);
    } finally {
      if (this.inFlight === inFlight) this.inFlight = null;
    }
    const { status, text } = answer;
    if (status !== 200) throw new ControlAnswerError(`control answered ${status}: ${text.slice(0, 200)}`, status);
    try {
      return JSON.parse(text) as OutcomeAck;
    } catch {
      throw new ControlAnswerError('control answered with a body that is not JSON', status);
    }
  }
}
