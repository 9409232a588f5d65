/**
 * Whether this gateway covers the calls it admits (docs/money.md, "Pause"): the last `coverage`
 * line control pushed on the sync stream (protocol/snapshot.ts `CoverageLine`), spent down by
 * the calls it admits.
 *
 * A keyed call is admitted covered only while coverage is on and the allowance (this gateway's
 * part of the pool's free capital) holds the call's price + premium (the most it could be
 * refunded) beside the calls under way and the failures recorded since. A call that ends
 * without a covered failure gives its part back; a failure keeps it. So the gateways together
 * never cover more failures than the free capital control last saw, however fast they come
 * between two lines.
 *
 * A new line restarts the count, but control may not have received the last failures yet: those
 * recorded in the last {@link CARRY_MS} (a shipping interval and an evaluation, with room) stay
 * counted against the new allowance until they are that old (control has them by then, and a
 * line that does not change is not written again). It errs on the side of admitting a call
 * uncovered. Failures since the line stay counted until the next one.
 *
 * Before any line (a control older than coverage, or none heard from yet) every call is covered,
 * as before coverage existed. Nothing is persisted: a restarted gateway covers until control
 * speaks, within a second of its stream opening.
 */
import { CoverageLine } from '../../protocol/snapshot';

/** How long a recorded failure stays counted against a new allowance. @default 5 s */
export const CARRY_MS = 5_000;

/** What `/health` shows: the last line and what is left of it. */
export interface CoverageState {
  covered: boolean;
  allowance: number;
  /** What the calls under way and the failures counted against the allowance hold of it. */
  held: number;
  received_at: string;
}

/** A covered failure: when it was recorded, and its price + premium. */
interface Failure {
  at: number;
  amount: number;
}

export class Coverage {
  private line: CoverageLine | null = null;
  private receivedAt = 0;
  /** The price + premium of the covered calls under way. */
  private inflight = 0;
  /** The failures recorded since the line. */
  private spent = 0;
  /** Failures recorded before the line and less than CARRY_MS ago, oldest first, and their sum. */
  private carried: Failure[] = [];
  private carriedSum = 0;
  /** Every covered failure of the last CARRY_MS, oldest first: what a new line carries over. */
  private readonly recent: Failure[] = [];
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Take a `coverage` line from the stream; false (nothing changed) when it does not parse. */
  apply(value: unknown): boolean {
    const parsed = CoverageLine.safeParse(value);
    if (!parsed.success) return false;
    const now = this.now();
    this.line = parsed.data;
    this.receivedAt = now;
    prune(this.recent, now);
    this.carried = this.recent.slice();
    this.carriedSum = this.carried.reduce((sum, f) => sum + f.amount, 0);
    this.spent = 0;
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

  /** A covered call admitted with `amount` is over; `failed`: its outcome is a covered failure. */
  end(amount: number, failed: boolean): void {
    if (amount === 0) return;
    this.inflight = Math.max(0, this.inflight - amount);
    if (!failed) return;
    this.spent += amount;
    const now = this.now();
    prune(this.recent, now);
    this.recent.push({ at: now, amount });
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

  /** What the calls under way, the failures since the line and those still carried hold now. */
  private held(now: number): number {
    this.carriedSum -= prune(this.carried, now);
    return this.inflight + this.spent + this.carriedSum;
  }
}

/** Drop the failures CARRY_MS old or older at `now` from `failures` (oldest first); returns their sum. */
function prune(failures: Failure[], now: number): number {
  let drop = 0;
  let sum = 0;
  while (drop < failures.length && failures[drop]!.at <= now - CARRY_MS) sum += failures[drop++]!.amount;
  if (drop > 0) failures.splice(0, drop);
  return sum;
}
