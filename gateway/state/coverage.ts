/**
 * Whether this gateway covers the calls it admits (docs/money.md, "Pause"): the last `coverage`
 * line control pushed on the sync stream (protocol/snapshot.ts `CoverageLine`), spent down by
 * the calls it admits.
 *
 * A keyed call is admitted covered only while coverage is on and the allowance (this gateway's
 * part of the pool's free capital) holds the call's price + premium (the most it could be
 * refunded) beside the calls under way and the covered failures still counted. A call that ends
 * without a covered failure gives its part back. A covered failure keeps it, against this line
 * and the next ones, until control has provably seen it, which takes both:
 *
 * 1. control committed its record: the shipper hears control's answer to the batch that held it
 *    (journal/shipper.ts `onAcked`, by call id), which numbers that commit among the ingests of
 *    the control process that made it (protocol/outcome.ts `OutcomeAck`: `ingest_seq`,
 *    `ingest_instance`);
 * 2. a line arrived from an evaluation that started after that commit: control writes an
 *    `ingested` line right before each `coverage` line, with the number of ingests its process
 *    had committed when the evaluation began, before it read the pool (`IngestedLine`). A
 *    failure acked with number n by process P is in the free capital of every line that comes
 *    after an `ingested` line of P with n or more.
 *
 * That is exact for this gateway's own failures. But control divides the free capital afresh at
 * each evaluation, so a failure lowers every gateway's allowance, not only its own: another
 * gateway may hold failures it covered under its larger allowance before, which control has not
 * ingested yet. Let go as soon as proven, this gateway would cover with capital another had
 * already promised (two gateways under a light load over-covered by a few calls in 21 so).
 * Nothing on the stream says when the others' failures of that moment have reached control, so
 * a proven failure counts on, for them:
 *
 * - for {@link CARRY_MS} more than the longest proof of this gateway lately took (from failure
 *   to proof; the others ship to the same control under the same load), {@link CARRY_MAX_MS} at
 *   most;
 * - and, within CARRY_MAX_MS of its proof, while a failure this gateway recorded before that
 *   proof still waits for its own: a load that rises shows in its own failures first.
 *
 * So the gateways together cover no more failures than the free capital control saw, however
 * long shipping and ingest lag, as long as the others' lag is not far beyond this gateway's: a
 * failure control has not seen stays counted, and calls go uncovered meanwhile. Where no proof
 * can come, time stands in, erring on the side of admitting calls uncovered:
 *
 * - a failure acked by another control process than the one the line comes from (the gateway
 *   moved after a failover, or the control restarted), acked by a control that does not number
 *   its ingests, or set aside by the shipper (control refused the record, so it never refunds
 *   it) is proven by the first line that arrives CARRY_MS or more after that ack, or by a line
 *   of the acking process that reflects it;
 * - a line that comes with no `ingested` line (a control older than the count) proves nothing,
 *   and the rule from before the count holds: every failure counted when it arrives stays
 *   counted until it is CARRY_MS old (a shipping interval and an evaluation, with room), and the
 *   failures after it until the next line.
 *
 * Before any line (a control older than coverage, or none heard from yet) every call is covered,
 * as before coverage existed; the failures of the last CARRY_MS are kept, counted against the
 * first line. Nothing is persisted: a restarted gateway covers until control speaks, within a
 * second of its stream opening.
 *
 * `admit` and `end` run for every call and do a constant amount of work but for letting go the
 * failures whose time has come (a heap, soonest first, then a queue by proof); an ack costs one
 * Map lookup per record, and a line one pass over the failures still counted.
 */
import type { OutcomeAck } from '../../protocol/outcome';
import { CoverageLine, type IngestedLine } from '../../protocol/snapshot';
import { Expiries } from './expiries';

/**
 * How much longer than the longest proof lately a proven failure counts; and, where no proof can
 * come, how long a failure counts: from its ack, for one acked by another control process; from
 * when it was recorded, under a control that does not number its ingests. @default 5 s
 */
export const CARRY_MS = 5_000;
/** The longest a proven failure counts on (its proof took long: control was away, or overloaded). @default 60 s */
export const CARRY_MAX_MS = 60_000;

/** What `/health` shows: the last line and what is left of it. */
export interface CoverageState {
  covered: boolean;
  allowance: number;
  /** What the calls under way and the failures counted against the allowance hold of it. */
  held: number;
  received_at: string;
}

/** Control's ack of a failure's record: by which process and with which number (null: no number), and when it arrived. */
interface Ack {
  instance: string | null;
  seq: number;
  at: number;
}

/** A covered failure still counted. */
interface Failure {
  id: string;
  /** Its price + premium. */
  amount: number;
  /** When it was recorded. */
  at: number;
  ack: Ack | null;
  /** Whether a line reflected it (then `until` is set for good), and when. */
  proven: boolean;
  provenAt: number;
  /** When it stops counting; null: not before it is proven (or, under an older control, the next line). */
  until: number | null;
}

export class Coverage {
  private line: CoverageLine | null = null;
  private receivedAt = 0;
  /** What the evaluation behind the line had ingested; null: the line came without (an older control). */
  private seen: IngestedLine | null = null;
  /** The price + premium of the covered calls under way. */
  private inflight = 0;
  /** Every covered failure still counted against the allowance, by call id, oldest first. */
  private readonly counted = new Map<string, Failure>();
  private countedSum = 0;
  /** How many of `counted` no ack was heard of yet. */
  private unacked = 0;
  /** The failures with an `until`, by it (an entry whose failure has gone, or moved, is passed over). */
  private readonly expiries = new Expiries<Failure>();
  /**
   * Every failure in the order they were recorded, from `waitingHead` on, to find the oldest not
   * proven yet (those proven or gone are passed over).
   */
  private waiting: Failure[] = [];
  private waitingHead = 0;
  /** Proven failures whose time has come, held while an older one of this gateway waits for its proof; in that order. */
  private deferred: Failure[] = [];
  private deferredHead = 0;
  /** The longest a proof took lately (ms: from the failure to the line that proved it), and when that was. */
  private lag = 0;
  private lagAt = 0;
  /** Names failures that came without a call id. */
  private anonymous = 0;
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /**
   * Take a `coverage` line from the stream, with the `ingested` line right before it (null when
   * there was none); false (nothing changed) when the coverage line does not parse.
   */
  apply(value: unknown, ingested: IngestedLine | null = null): boolean {
    const parsed = CoverageLine.safeParse(value);
    if (!parsed.success) return false;
    const now = this.now();
    this.expire(now);
    this.line = parsed.data;
    this.receivedAt = now;
    this.seen = ingested;
    for (const f of this.counted.values()) {
      if (f.proven) continue;
      if (ingested === null) {
        // Nothing proves what this line reflects: carried until CARRY_MS old, as before the count.
        if (f.until === null) this.countUntil(f, f.at + CARRY_MS);
      } else if (f.ack !== null && this.reflects(f.ack)) {
        this.prove(f, now);
      } else {
        // Carried under an older control, or before any line: proof is due now.
        f.until = null;
      }
    }
    this.expire(now);
    return true;
  }

  /**
   * Admit a keyed call whose refund could be `amount` (price + premium): true when it is covered
   * (then `end` must follow, once), false when it goes uncovered.
   */
  admit(amount: number): boolean {
    const line = this.line;
    if (line === null) return true;
    if (!line.covered) return false;
    if (amount === 0) return true;
    if (line.allowance - this.held(this.now()) < amount) return false;
    this.inflight += amount;
    return true;
  }

  /**
   * A covered call admitted with `amount` is over; `failed`: its outcome is a covered failure,
   * counted until control has seen the record of `callId`.
   */
  end(amount: number, failed: boolean, callId: string | null = null): void {
    if (amount === 0) return;
    this.inflight = Math.max(0, this.inflight - amount);
    if (!failed) return;
    const now = this.now();
    let id = callId ?? `#${++this.anonymous}`;
    if (this.counted.has(id)) id = `#${++this.anonymous}`;
    const failure: Failure = { id, amount, at: now, ack: null, proven: false, provenAt: 0, until: null };
    this.counted.set(id, failure);
    this.waiting.push(failure);
    if (this.waiting.length - this.waitingHead > 2 * this.counted.size + 1_024) {
      // Mostly proven or gone (nothing looked for the oldest lately): keep those still waiting.
      this.waiting = this.waiting.slice(this.waitingHead).filter((f) => !f.proven && this.counted.get(f.id) === f);
      this.waitingHead = 0;
    }
    this.countedSum += amount;
    this.unacked++;
    // Before any line: kept for CARRY_MS, for the first line to count.
    if (this.line === null) this.countUntil(failure, now + CARRY_MS);
    this.expire(now);
  }

  /** Whether a failure waits for its ack (the shipper reads a batch's call ids only then). */
  get waits(): boolean {
    return this.unacked > 0;
  }

  /**
   * Control committed the records of `callIds` (`ack`: its answer), or the shipper set them aside
   * (null). One lookup per id; a failure the line in force already reflects is proven now.
   */
  acked(callIds: readonly string[], ack: OutcomeAck | null): void {
    if (this.unacked === 0) return;
    const now = this.now();
    const heard = ackOf(ack, now);
    const seen = this.seen;
    const proves = seen !== null && heard.instance === seen.instance && heard.seq <= seen.seq;
    for (const id of callIds) {
      const f = this.counted.get(id);
      if (f === undefined || f.ack !== null) continue;
      f.ack = heard;
      this.unacked--;
      if (proves && !f.proven) this.prove(f, now);
    }
  }

  /** The last line and what is held of it (null before any line). */
  get state(): CoverageState | null {
    if (this.line === null) return null;
    return {
      covered: this.line.covered,
      allowance: this.line.allowance,
      held: this.held(this.now()),
      received_at: new Date(this.receivedAt).toISOString(),
    };
  }

  /** What the calls under way and the failures still counted hold now. */
  private held(now: number): number {
    if (this.expiries.next <= now || this.deferredHead < this.deferred.length) this.expire(now);
    return this.inflight + this.countedSum;
  }

  /** Whether the line in force (it has a count) reflects a failure acked so. */
  private reflects(ack: Ack): boolean {
    const seen = this.seen!;
    if (ack.instance === seen.instance) return ack.seq <= seen.seq;
    // Another process's number, or none, says nothing of this line: the ack's age must.
    return this.receivedAt - ack.at >= CARRY_MS;
  }

  /**
   * A line reflects `f`: for the other gateways, it counts on for CARRY_MS more than the longest
   * proof lately took (CARRY_MAX_MS at most), then while an older failure waits (`caughtUp`).
   */
  private prove(f: Failure, now: number): void {
    f.proven = true;
    f.provenAt = now;
    const lag = now - f.at;
    if (lag >= this.lag || now - this.lagAt > CARRY_MAX_MS) {
      this.lag = lag;
      this.lagAt = now;
    }
    this.countUntil(f, now + Math.min(CARRY_MAX_MS, CARRY_MS + this.lag));
  }

  private countUntil(f: Failure, until: number): void {
    f.until = until;
    this.expiries.push(until, f);
  }

  /** Let go of the failures whose time has come by `now`. */
  private expire(now: number): void {
    while (this.expiries.next <= now) {
      const { at, item: f } = this.expiries.pop();
      if (f.until !== at || this.counted.get(f.id) !== f) continue;
      if (f.proven && !this.caughtUp(f, now)) this.deferred.push(f);
      else this.release(f);
    }
    while (this.deferredHead < this.deferred.length) {
      const f = this.deferred[this.deferredHead]!;
      if (this.counted.get(f.id) === f) {
        if (!this.caughtUp(f, now)) break;
        this.release(f);
      }
      this.deferredHead++;
    }
    if (this.deferredHead === this.deferred.length) {
      this.deferred = [];
      this.deferredHead = 0;
    }
  }

  /**
   * Whether proven `f` may go: no failure this gateway recorded before its proof still waits for
   * its own (the other gateways' failures of that time go through the same control), or
   * CARRY_MAX_MS have passed since its proof.
   */
  private caughtUp(f: Failure, now: number): boolean {
    return now - f.provenAt >= CARRY_MAX_MS || this.oldestWaiting() > f.provenAt;
  }

  /** When the oldest failure not proven yet was recorded (Infinity: none). */
  private oldestWaiting(): number {
    const list = this.waiting;
    let i = this.waitingHead;
    while (i < list.length && (list[i]!.proven || this.counted.get(list[i]!.id) !== list[i])) i++;
    if (i > 1_024 && i * 2 > list.length) {
      this.waiting = list.slice(i);
      i = 0;
    }
    this.waitingHead = i;
    return i < this.waiting.length ? this.waiting[i]!.at : Infinity;
  }

  private release(f: Failure): void {
    this.counted.delete(f.id);
    this.countedSum -= f.amount;
    if (f.ack === null) this.unacked--;
  }
}

/**
 * Control's answer as proof: its process and number when it gives both (the shipper reads the
 * answer unchecked); else none (an older control, or a record set aside).
 */
function ackOf(ack: OutcomeAck | null, at: number): Ack {
  const seq: unknown = ack?.ingest_seq;
  const instance: unknown = ack?.ingest_instance;
  if (typeof seq === 'number' && Number.isSafeInteger(seq) && seq >= 1 && typeof instance === 'string' && instance !== '') {
    return { instance, seq, at };
  }
  return { instance: null, seq: 0, at };
}
