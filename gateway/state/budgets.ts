/**
 * Prepaid budgets (protocol/budgets.ts): the money this gateway instance holds per account, which
 * the handler's pay stage spends without asking control per call, and the requests to control's
 * `POST /_sync/v1/budgets` that get more of it, give some back and report.
 *
 * Per account, for this instance only, three cumulative counters that only grow:
 *
 *     available = granted − returned − spent
 *
 * `granted` is the largest total control ever answered (so a lost, repeated or late answer never
 * adds twice), `returned` what the gateway gave back when control asked, `spent` the premiums of
 * the calls it admitted. A call is admitted only when `available` covers its premium, checked and
 * spent in one synchronous step: the gateway never admits past what control granted it, whether
 * control answers or not.
 *
 * The requests, all on the sync token, to the control the sync stream uses (`ControlEndpoints`,
 * through `SyncHttp` like the outcome shipper):
 * - **want** (`need` > 0): a call found the budget short. Wants of one event-loop turn go in one
 *   request; an account has at most one ask on the wire, and calls short meanwhile wait on it, for
 *   at most {@link BUDGET_WAIT_MS}.
 * - **ahead** (`need` 0): after an admission left less than half the last grant step (or less than
 *   two premiums); nobody waits on it.
 * - **poll**: every {@link BUDGET_POLL_MS} while the instance holds budget or has returns control
 *   has not acknowledged, `held` for those accounts, so control can ask some back.
 * - **drained**: once the journal's backlog has been zero after the start, `drained: true` rides
 *   on the polls until one is answered 200.
 *
 * An answer that still leaves a wanting account short stops its wants for {@link SHORT_RETRY_MS}
 * (calls are refused at once meanwhile), unless a delta names it in `accounts_funded`: an
 * exhausted account costs control one request a second, not one per call. A failed request backs
 * off every request (exponentially, to {@link BUDGET_MAX_BACKOFF_MS}); nothing here throws into
 * the proxy or blocks a call past the wait.
 */
import { BUDGET_ACCOUNTS_MAX, BUDGET_POLL_MS, BudgetAnswer, SYNC_BUDGETS_PATH, type BudgetRequest } from '../../protocol/budgets';
import type { Logger } from '../../runtime/log';
import { ControlAnswerError, SyncHttp, type ControlEndpoints } from '../control-link/sync-http';

/** Longest a short call waits for control's answer before it looks at its budget again. @default 2 s */
export const BUDGET_WAIT_MS = 2_000;
/** After an answer left an account short, no want for it this long (unless it is funded). @default 1 s */
export const SHORT_RETRY_MS = 1_000;
/** A budget request not answered within this has failed. @default 6 s, the gateway's other deadline on control */
export const BUDGET_POST_TIMEOUT_MS = 6_000;
/** Longest pause after failed requests. @default 10 s */
export const BUDGET_MAX_BACKOFF_MS = 10_000;

/** One account's budget for this instance. */
class AccountBudget {
  granted = 0;
  returned = 0;
  spent = 0;
  /** The largest `returned` control has acknowledged (a request carrying it was answered 200). */
  reported = 0;
  /** The last increase of `granted`: the step control grants in. */
  step = 0;
  /** No want for this account before this time (an answer left it short), unless it is funded. */
  shortUntil = 0;
  /** No ask ahead of need before this time (the last one got nothing). */
  aheadUntil = 0;
  /** The ask on the wire (or queued for this turn's request) for this account; at most one. */
  asking: Asking | null = null;

  get available(): number {
    return this.granted - this.returned - this.spent;
  }
}

/** An ask for one account: what the waiting calls need, and their release. */
interface Asking {
  /** The budget the calls waiting want to see (the largest premium); 0 for an ask ahead of need. */
  target: number;
  /** `granted` when the ask was made: an answer that does not raise it got nothing. */
  readonly grantedAt: number;
  /** Resolves when the answer came, the request failed, or {@link BUDGET_WAIT_MS} passed. */
  readonly wait: Promise<void>;
  release(): void;
}

export interface BudgetsOptions {
  /** The gateway's controls, shared with the sync stream and the shipper. */
  control: ControlEndpoints;
  syncToken: string;
  gatewayId: string;
  /** This process run's id (`randomUUID()` at start), sent on the stream and in every request. */
  instance: string;
  /** Outcome records not yet acknowledged by control (the journal's backlog). */
  backlog: () => number;
  log: Logger;
  /** @default BUDGET_POLL_MS */
  pollMs?: number;
  now?: () => number;
}

/** What `/health`-like summaries show: the instance, the accounts it holds budget for, and their total. */
export interface BudgetSummary {
  instance: string;
  accounts: number;
  available: number;
  drained: boolean;
}

export class Budgets {
  readonly instance: string;
  private readonly opts: BudgetsOptions;
  private readonly http: SyncHttp;
  private readonly now: () => number;
  private readonly pollMs: number;
  private readonly accounts = new Map<string, AccountBudget>();
  /** Asks of this turn, by account, sent together at its end. */
  private readonly queued = new Map<string, AccountBudget>();
  private flushScheduled = false;
  /** Requests on the wire, aborted when the gateway moves to another control or stops. */
  private readonly inFlight = new Set<AbortController>();
  private pollTimer: NodeJS.Timeout | null = null;
  private polling = false;
  private failures = 0;
  /** No request before this time (after failures). */
  private pausedUntil = 0;
  /** The journal's backlog has been zero since the start: every earlier record is acked. */
  private drainSeen = false;
  /** Control answered a request carrying `drained: true`. */
  private drainedSent = false;
  private stopped = false;

  constructor(opts: BudgetsOptions) {
    this.opts = opts;
    this.instance = opts.instance;
    this.now = opts.now ?? Date.now;
    this.pollMs = opts.pollMs ?? BUDGET_POLL_MS;
    this.http = new SyncHttp({ controlUrl: opts.control, syncToken: opts.syncToken, maxSockets: 2 });
    // Another control took over: what was asked of the old one is asked of the new one.
    opts.control.onMove(() => {
      this.failures = 0;
      this.pausedUntil = 0;
      for (const c of this.inFlight) c.abort();
    });
  }

  start(): void {
    this.schedulePoll(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    for (const c of this.inFlight) c.abort();
    for (const a of this.accounts.values()) a.asking?.release();
    this.http.close();
  }

  /** This instance's budget for `account` now (0 when it holds none). */
  available(account: string): number {
    return this.accounts.get(account)?.available ?? 0;
  }

  /**
   * The hot path: spend `premium` from `account`'s budget when it covers it (true), else spend
   * nothing (false). No allocation unless the budget runs low, when an ask ahead of need is
   * queued for the end of the turn.
   */
  take(account: string, premium: number): boolean {
    const a = this.accounts.get(account);
    if (a === undefined) return false;
    const left = a.granted - a.returned - a.spent - premium;
    if (left < 0) return false;
    a.spent += premium;
    if ((left * 2 < a.step || left < 2 * premium) && a.asking === null) this.askAhead(account, a);
    return true;
  }

  /**
   * A call found `account` short of `premium`: ask control (with the other wants of this turn),
   * or join the ask on the wire. Resolves when the answer came, the request failed, or
   * {@link BUDGET_WAIT_MS} passed, whichever is first (a call that found an ask ahead of need on
   * the wire waits for it first, so at most twice that); null when no ask is made (an answer left
   * the account short less than {@link SHORT_RETRY_MS} ago, or requests are backing off): refuse now.
   */
  want(account: string, premium: number, again = true): Promise<void> | null {
    let a = this.accounts.get(account);
    if (a !== undefined && a.asking !== null) {
      const asking = a.asking;
      if (this.queued.has(account)) {
        // Not sent yet: the request carries the largest need of the calls waiting on it.
        if (premium > asking.target) asking.target = premium;
        return asking.wait;
      }
      if (asking.target > 0 || !again) return asking.wait;
      // An ask ahead of need is on the wire: wait for it, and ask with the need if still short,
      // once (another ask ahead of need found then is waited for, not followed again: the wait stays bounded).
      const held = a;
      return asking.wait.then(() => (held.available >= premium ? undefined : (this.want(account, premium, false) ?? undefined)));
    }
    const now = this.now();
    if (this.stopped || now < this.pausedUntil || (a !== undefined && now < a.shortUntil)) return null;
    if (a === undefined) this.accounts.set(account, (a = new AccountBudget()));
    return this.enqueue(account, a, premium).wait;
  }

  /** Deposits or refills reached these accounts: the next short call asks at once. */
  funded(accounts: readonly string[]): void {
    for (const account of accounts) {
      const a = this.accounts.get(account);
      if (a === undefined) continue;
      a.shortUntil = 0;
      a.aheadUntil = 0;
    }
  }

  summary(): BudgetSummary {
    let accounts = 0;
    let available = 0;
    for (const a of this.accounts.values()) {
      if (a.available <= 0) continue;
      accounts++;
      available += a.available;
    }
    return { instance: this.instance, accounts, available, drained: this.drainedSent };
  }

  private askAhead(account: string, a: AccountBudget): void {
    const now = this.now();
    if (this.stopped || now < this.pausedUntil || now < a.aheadUntil) return;
    this.enqueue(account, a, 0);
  }

  /** Queue an ask for this turn's request; calls wait on it for at most BUDGET_WAIT_MS. */
  private enqueue(account: string, a: AccountBudget, target: number): Asking {
    let release!: () => void;
    const wait = new Promise<void>((resolve) => (release = resolve));
    const timer = setTimeout(release, BUDGET_WAIT_MS);
    timer.unref();
    const asking: Asking = {
      target,
      grantedAt: a.granted,
      wait,
      release: () => {
        clearTimeout(timer);
        release();
      },
    };
    a.asking = asking;
    this.queued.set(account, a);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return asking;
  }

  /** Send this turn's asks in one request. */
  private flush(): void {
    this.flushScheduled = false;
    if (this.queued.size === 0) return;
    // At most the protocol's accounts per request; the rest go in the next one, a turn later.
    const asked: [string, AccountBudget][] = [];
    for (const entry of this.queued) {
      if (asked.length === BUDGET_ACCOUNTS_MAX) break;
      asked.push(entry);
    }
    for (const [account] of asked) this.queued.delete(account);
    if (this.queued.size > 0) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    const want = asked.map(([account, a]) => ({ account, need: Math.max(0, a.asking!.target - a.available) }));
    void this.send({ gateway_id: this.opts.gatewayId, instance: this.instance, want, held: [] }).then((ok) => {
      const now = this.now();
      for (const [, a] of asked) {
        const asking = a.asking!;
        a.asking = null;
        asking.release();
        if (!ok) continue;
        // Still short, or nothing more granted: control has no more for it now.
        if (asking.target > 0 && a.available < asking.target) a.shortUntil = now + SHORT_RETRY_MS;
        if (a.granted === asking.grantedAt) a.aheadUntil = now + SHORT_RETRY_MS;
      }
    });
  }

  private schedulePoll(delay: number): void {
    if (this.stopped) return;
    if (this.pollTimer !== null) clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delay);
    this.pollTimer.unref();
  }

  /**
   * Every poll interval: `held` for each account with budget or returns not yet acknowledged,
   * and `drained` once the journal has been empty; nothing is sent when there is neither.
   */
  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    if (!this.drainSeen && this.opts.backlog() === 0) this.drainSeen = true;
    const drained = this.drainSeen && !this.drainedSent;
    const held = this.heldList();
    if ((held.length === 0 && !drained) || this.now() < this.pausedUntil) return this.schedulePoll(this.pollMs);
    this.polling = true;
    const body: BudgetRequest = { gateway_id: this.opts.gatewayId, instance: this.instance, want: [], held };
    if (drained) body.drained = true;
    const ok = await this.send(body);
    this.polling = false;
    if (ok) {
      if (drained) this.drainedSent = true;
      for (const { account, returned } of held) {
        const a = this.accounts.get(account)!;
        if (returned > a.reported) a.reported = returned;
      }
    }
    this.schedulePoll(ok ? this.pollMs : Math.max(this.pollMs, this.pausedUntil - this.now()));
  }

  /**
   * The accounts a poll reports: returns control has not acknowledged first, then budget held, at
   * most the protocol's accounts per request (beyond that, the first ones in the order held).
   */
  private heldList(): { account: string; returned: number }[] {
    const unreported: { account: string; returned: number }[] = [];
    const holding: { account: string; returned: number }[] = [];
    for (const [account, a] of this.accounts) {
      if (a.returned > a.reported) unreported.push({ account, returned: a.returned });
      else if (a.available > 0) holding.push({ account, returned: a.returned });
    }
    const held = unreported.concat(holding);
    return held.length > BUDGET_ACCOUNTS_MAX ? held.slice(0, BUDGET_ACCOUNTS_MAX) : held;
  }

  /** POST one request; apply its answer. True when control answered 200 with a valid answer. */
  private async send(body: BudgetRequest): Promise<boolean> {
    if (this.stopped) return false;
    const abort = new AbortController();
    this.inFlight.add(abort);
    try {
      const answer = await this.http.post(SYNC_BUDGETS_PATH, JSON.stringify(body), BUDGET_POST_TIMEOUT_MS, abort.signal);
      if (answer.status !== 200)
        throw new ControlAnswerError(`control answered ${answer.status}: ${answer.text.slice(0, 200)}`, answer.status);
      let json: unknown;
      try {
        json = JSON.parse(answer.text);
      } catch {
        throw new ControlAnswerError('control answered with a body that is not JSON', answer.status);
      }
      const parsed = BudgetAnswer.safeParse(json);
      if (!parsed.success) {
        throw new ControlAnswerError(`control's answer does not parse: ${parsed.error.issues[0]?.message ?? 'invalid'}`, answer.status);
      }
      this.apply(parsed.data);
      this.failures = 0;
      return true;
    } catch (err) {
      if (abort.signal.aborted) return false;
      this.failures++;
      const cap = Math.min(BUDGET_MAX_BACKOFF_MS, this.pollMs * 2 ** Math.min(this.failures, 16));
      this.pausedUntil = this.now() + cap / 2 + Math.random() * (cap / 2);
      // Said once per run of failures; the rest at debug.
      const fields = { err, failures: this.failures };
      if (this.failures === 1) this.opts.log.warn('budget request failed; spending only what is held', fields);
      else this.opts.log.debug('budget request failed; spending only what is held', fields);
      return false;
    } finally {
      this.inFlight.delete(abort);
    }
  }

  /** Control's answer: grants only ever raise `granted`; an `ask` gives back what is still unspent, up to it. */
  private apply(answer: BudgetAnswer): void {
    for (const g of answer.accounts) {
      let a = this.accounts.get(g.account);
      if (a === undefined) this.accounts.set(g.account, (a = new AccountBudget()));
      if (g.granted > a.granted) {
        a.step = g.granted - a.granted;
        a.granted = g.granted;
      }
      if (g.ask > 0) {
        const back = Math.min(g.ask, Math.max(0, a.available));
        if (back > 0) a.returned += back;
      }
    }
  }
}
