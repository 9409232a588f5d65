/**
 * The settler (docs/design.md §6): every `settler.cadenceMs` it settles the outcomes received so far,
 * endpoint by endpoint (oldest backlog first, one batch per endpoint per round), each batch at
 * most `settler.batchCap` calls and whole in one transaction. Batches are group-committed:
 * one transaction takes batches until they hold `GROUP_COMMIT_CALLS` calls, and while a
 * backlog is large each endpoint's batch is its equal share of that (never above the cap), so
 * one commit covers one stretch of time across all endpoints: their outcome rows share
 * pages, and each page is then written once per commit instead of once per endpoint. A small
 * backlog is settled in one commit. Between commits the settler yields to the event loop, so
 * control keeps answering while a large backlog drains.
 *
 * States: `running` while settling, `idle` between runs, `paused` by an operator, `halted` while
 * a settled batch has no receipt. A pause is audited, kept in the database (it survives a
 * restart, and every control on a shared database reads it there: before each scheduled run
 * and between group commits) and takes effect at the next group commit. `runOnce()` settles
 * everything received before it was called, paused or not, and never overlaps a scheduled run
 * of this control.
 *
 * Several controls on one PostgreSQL database each have a settler, and only the leader's
 * settles on the cadence (`leadership.ts`); a run-once through any other control runs there,
 * once: settlement is serialised by the store's writer lock, each group of batches in one
 * transaction that reads the unsettled calls after taking it, so a call is never settled twice
 * whichever controls settle at once.
 *
 * The halt is an integrity failure, not a setting: control signs every batch's receipt in the
 * batch's own transaction, so a batch without one was changed outside control (its receipt
 * deleted, perhaps after its rows were rewritten). The settler finds it on start (and when a
 * batch it commits finds a gap in the chain), then signs and settles nothing, and refuses
 * `resume()` and `runOnce()` (`SettlerHaltedError`), until no settled batch lacks its receipt:
 * the operator restored the database, or re-signed the batch knowingly (`svcctl receipts
 * reissue`, which calls `checkReceipts()`). It halts the same way when the receipt chain does
 * not verify (`receipts/chain-guard.ts`: a receipt changed, swapped or unlinked since it was
 * signed), checked before every run; that halt lasts until control restarts on a restored database.
 */
import type { Logger } from '../../runtime/log';
import {
  SettledSums,
  settlerHaltWayOut,
  type BatchView,
  type RunOnceView,
  type SettlerHalt,
  type SettlerState,
  type SettlerStatus,
} from '../../protocol/settlement';
import type { SettlerControls } from '../context';
import type { Actor, Store } from '../store';
import type { NextBatch } from '../store/settlement';
import { MissingReceiptError } from '../store/receipts';
import { ReceiptChainGuard, type ChainBreak } from '../receipts/chain-guard';
import { soleLeadership, type Leadership } from './leadership';
import { planBatch } from './plan';
import { CodedError } from '../../protocol/coded-error';

/**
 * Calls per group commit: batches are added to one transaction until they hold this many.
 * Bounds how long one commit holds the event loop (about 0.1–0.3 s). @default 20000
 */
export const GROUP_COMMIT_CALLS = 20_000;

/** `meta` row holding the operator's pause (1) across restarts. */
export const PAUSED_META = 'settler_paused';

/** The batches of one settler run (`runRounds`), handed to each of the run's group commits. */
export interface RunRounds extends NextBatch {
  /** A group commit made batches; the round goes on even if it ended right after one it had no chance to report. */
  groupMade(): void;
}

/**
 * A settler run's batches, round by round: every endpoint with a backlog once a round, oldest
 * backlog first, each with an equal share of a group commit's calls (at most `batchCap`); a
 * round that made nothing ends the run.
 */
export function runRounds(batchCap: number): RunRounds {
  let round: string[] = [];
  let share = batchCap;
  let madeThisRound = true;
  return {
    groupMade() {
      madeThisRound = true;
    },
    next(previousMade) {
      if (previousMade === true) madeThisRound = true;
      if (round.length === 0) return madeThisRound ? 'round' : null;
      return { endpointId: round.shift()!, cap: share };
    },
    startRound(pending) {
      round = [...pending];
      share = Math.min(batchCap, Math.ceil(GROUP_COMMIT_CALLS / Math.max(1, round.length)));
      madeThisRound = false;
    },
  };
}

export interface SettlerOptions {
  store: Store;
  log: Logger;
  now: () => number;
  /** @default config settler.cadenceMs */
  cadenceMs: number;
  /** @default config settler.batchCap */
  batchCap: number;
  /** Whether this settler settles on the cadence, and who does. @default always this one, leader unnamed */
  leadership?: Leadership;
  /** The receipt chain as this control verified it (shared with the indexer). @default a guard over `store.receipts` */
  chain?: ReceiptChainGuard;
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** `resume()` or `runOnce()` while the settler is halted; the admin API answers 409 `svc_settler_halted`. */
export class SettlerHaltedError extends CodedError {
  override readonly code = 'SVC_ERR_SETTLER_HALTED';
  constructor(readonly halt: SettlerHalt) {
    super(`the settler is halted: ${halt.reason}; ${settlerHaltWayOut(halt)}`);
  }
}

/** The halt for a receipt chain that does not verify, or null while it does. */
function chainHaltOf(broken: ChainBreak | null): SettlerHalt | null {
  return broken === null ? null : { batch: broken.batch, batches_without_receipt: 0, reason: broken.reason };
}

/** The halt for the settled batches without a receipt, or null when there are none. */
function haltOf(missing: { batch: number; count: number } | null): SettlerHalt | null {
  if (missing === null) return null;
  const others = missing.count > 1 ? ` (${missing.count} settled batches have none)` : '';
  return {
    batch: missing.batch,
    batches_without_receipt: missing.count,
    reason: `batch ${missing.batch} is settled but has no receipt${others}`,
  };
}

export class Settler implements SettlerControls {
  private readonly opts: SettlerOptions;
  private readonly leadership: Leadership;
  /** Whether this settler led at its last scheduled run (a new leader checks the receipts first). */
  private led = true;
  private paused: boolean;
  private started = false;
  private stopped = false;
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  /** Runs are chained so a run-once and a scheduled run never interleave. */
  private chain: Promise<unknown> = Promise.resolve();
  private lastRunAt: number | null = null;
  private lastBatch: BatchView | null = null;
  private lastError: string | null = null;
  /** The halt on settled batches without a receipt; the chain guard's is {@link halted}'s other half. */
  private halt: SettlerHalt | null = null;
  private readonly guard: ReceiptChainGuard;

  /** A settler for `opts.store`, with the operator's pause and the last batch read from it. */
  static async open(opts: SettlerOptions): Promise<Settler> {
    const [paused, lastBatch] = await Promise.all([opts.store.meta(PAUSED_META), opts.store.settlement.lastBatch()]);
    const settler = new Settler(opts, paused === 1, lastBatch);
    await settler.checkReceipts();
    return settler;
  }

  private constructor(opts: SettlerOptions, paused: boolean, lastBatch: BatchView | null) {
    this.opts = opts;
    this.leadership = opts.leadership ?? soleLeadership(() => null);
    this.paused = paused;
    this.lastBatch = lastBatch;
    this.guard = opts.chain ?? new ReceiptChainGuard(opts.store.receipts, opts.log);
  }

  /** Why the settler is halted: a settled batch without a receipt, else a receipt chain that does not verify. */
  private get halted(): SettlerHalt | null {
    return this.halt ?? chainHaltOf(this.guard.broken);
  }

  /** Claim the leadership (when several controls share the database), then start the cadence. */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    // A control that takes the lease over settles at once: the calls waited a lease already.
    this.leadership.onTaken(() => this.runNow());
    await this.leadership.start();
    // The first walk of the receipt chain, in the background: runs wait for it.
    void this.exclusive(() => this.guard.advance()).catch(() => undefined);
    this.schedule();
  }

  /** Stop the cadence, wait for a batch in progress to commit, and give the leadership up. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.chain.catch(() => undefined);
    await this.leadership.stop();
  }

  /**
   * Pause scheduled settlement (audited; kept across restarts) and answer the new status.
   * Resolves once the run in flight, if any, has ended (it stops after its current group
   * commit), so it answers `paused` and nothing is settling.
   */
  async pause(by: Actor): Promise<SettlerStatus> {
    await this.setPaused(true, by);
    await this.exclusive(() => Promise.resolve());
    return this.status();
  }

  /** Settle on the cadence again; throws `SettlerHaltedError` while halted. */
  async resume(by: Actor): Promise<SettlerStatus> {
    const halt = this.halted;
    if (halt !== null) throw new SettlerHaltedError(halt);
    await this.setPaused(false, by);
    return this.status();
  }

  /**
   * Settle everything received until now, even while paused; resolves with the batches made.
   * Rejects with `SettlerHaltedError` while halted.
   */
  runOnce(): Promise<RunOnceView> {
    return this.exclusive(async () => {
      await this.guard.advance();
      const halt = this.halted;
      if (halt !== null) throw new SettlerHaltedError(halt);
      const batches = await this.drain(true);
      const sums = Object.fromEntries(
        Object.keys(SettledSums.shape).map((field) => [field, batches.reduce((n, b) => n + b[field as keyof SettledSums], 0)]),
      ) as SettledSums;
      return { batches, ...sums, backlog: (await this.opts.store.settlement.backlog()).count };
    });
  }

  /**
   * Look for settled batches without a receipt: halt on the oldest, or lift the halt when there
   * are none (after a reissue or on start). Returns the halt.
   */
  async checkReceipts(): Promise<SettlerHalt | null> {
    const { store, log } = this.opts;
    const was = this.halt;
    this.halt = haltOf(await store.receipts.missing());
    if (this.halt !== null && this.halt.batch !== was?.batch)
      log.error('settler halted', { batch: this.halt.batch, reason: this.halt.reason });
    if (this.halt === null && was !== null) log.info('settler halt lifted', { batch: was.batch });
    return this.halted;
  }

  async status(): Promise<SettlerStatus> {
    const { store } = this.opts;
    // Another control may have paused the settler or settled a batch since.
    const [backlog, paused, lastBatch, leader] = await Promise.all([
      store.settlement.backlog(),
      store.meta(PAUSED_META),
      store.settlement.lastBatch(),
      this.leadership.leader(),
    ]);
    this.paused = paused === 1;
    if (lastBatch !== null && (this.lastBatch === null || lastBatch.id > this.lastBatch.id)) this.lastBatch = lastBatch;
    const halted = this.halted;
    const state: SettlerState = halted !== null ? 'halted' : this.running ? 'running' : this.paused ? 'paused' : 'idle';
    const last = this.lastBatch;
    return {
      state,
      cadence_ms: this.opts.cadenceMs,
      batch_cap: this.opts.batchCap,
      backlog: backlog.count,
      lag_ms: backlog.oldest_received_at === null ? null : Math.max(0, this.opts.now() - backlog.oldest_received_at),
      last_run_at: this.lastRunAt === null ? null : new Date(this.lastRunAt).toISOString(),
      last_batch:
        last === null
          ? null
          : {
              id: last.id,
              endpoint_id: last.endpoint_id,
              calls: last.calls,
              refunds: last.refunds,
              premiums: last.premiums,
              at: last.created_at,
            },
      last_error: this.lastError,
      halted,
      leader,
    };
  }

  private async setPaused(paused: boolean, by: Actor): Promise<void> {
    await this.opts.store.mutate(
      { ...by, now: this.opts.now() },
      { action: paused ? 'settler.pause' : 'settler.resume', detail: { was: this.paused ? 'paused' : 'active' } },
      (tx) => tx.setMeta(PAUSED_META, paused ? 1 : 0),
    );
    this.paused = paused;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.scheduledRun().then(() => this.schedule());
    }, this.opts.cadenceMs);
    this.timer.unref();
  }

  /**
   * Run the next scheduled run now instead of at its time (the lease was just taken). While a
   * scheduled run is under way there is no timer: it is the run, and it schedules the next.
   */
  private runNow(): void {
    if (this.timer === null || this.stopped) return;
    clearTimeout(this.timer);
    this.timer = null;
    void this.scheduledRun().then(() => this.schedule());
  }

  private scheduledRun(): Promise<void> {
    return this.exclusive(async () => {
      const leading = this.leadership.leading();
      const took = leading && !this.led;
      this.led = leading;
      if (!leading || this.stopped) return;
      // The receipts added since the last run verify (before the pause is read, which the drain then follows at once).
      await this.guard.advance();
      this.paused = (await this.opts.store.meta(PAUSED_META)) === 1;
      // The control that led before may have halted on a batch without a receipt.
      if (took) await this.checkReceipts();
      if (!this.paused && this.halted === null) await this.drain(false);
    }).catch(() => undefined); // recorded in lastError by drain
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Settle what was received up to now, round by round: one batch per endpoint per round,
   * endpoints with the oldest backlog first. Any run stops early on stop(); a scheduled one
   * also on pause. A batch that finds a settled batch without a receipt rolls back and halts
   * the settler.
   */
  private async drain(force: boolean): Promise<BatchView[]> {
    const { store, log, now, batchCap } = this.opts;
    const boundary = now();
    const made: BatchView[] = [];
    this.running = true;
    this.lastRunAt = boundary;
    const next = runRounds(batchCap);
    try {
      for (;;) {
        if (!force && made.length > 0) this.paused = (await store.meta(PAUSED_META)) === 1;
        if (this.stopped || (!force && (this.paused || !this.leadership.leading()))) return made;
        const group = await store.settlement.settleGroup(next, boundary, now(), planBatch, GROUP_COMMIT_CALLS);
        if (group.length === 0) break;
        next.groupMade();
        made.push(...group);
        this.lastBatch = group[group.length - 1]!;
        await yieldToEventLoop();
      }
      if (made.length > 0) log.debug('settled', { batches: made.length, calls: made.reduce((n, b) => n + b.calls, 0) });
      this.lastError = null;
      return made;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      if (message !== this.lastError) log.error('settlement failed', { err });
      this.lastError = message;
      const halt = err instanceof MissingReceiptError ? await this.checkReceipts() : null;
      if (halt !== null) throw new SettlerHaltedError(halt);
      throw err;
    } finally {
      this.running = false;
    }
  }
}
